import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logging.js';
import { cookiePolicy } from '../oidc/cookies.js';
import { redirect } from '../oidc/pages.js';
import { safeReturnTo } from '../oidc/return-to.js';
import { sessionOf } from '../oidc/session-loader.js';
import type { SessionStore } from '../oidc/sessions.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { OwnRoute } from '../http/own-route.js';
import type { CredentialLoader } from '../http/credentials.js';
import type { TokenVerifier } from '../tokens/verifier.js';
import { sendAppPage } from './app-page.js';
import { createAssets } from './assets.js';
import { UI_PATHS } from './paths.js';
import { answerPageCall } from './quiet-401.js';
import { hostSessionLoader } from './session-credential.js';
import { createShell } from './shell.js';
import { createSignIn } from './sign-in.js';

export interface UiDeps {
  readonly basePath: string;
  readonly cookieSecure: boolean;
  readonly sessions: SessionStore;
  readonly verifier: TokenVerifier;
  readonly principals: PrincipalCache;
  readonly logger: Logger;
  readonly sessionMaxAgeSeconds: number;
  /** OIDC signs people in (its module owns /flowgate/login and /flowgate/logout); else flowgate's own sign-in page does. */
  readonly oidc: boolean;
  /** MLflow's URL with its static prefix, no trailing slash. */
  readonly upstreamBase: string;
  readonly upstreamTimeoutMs: number;
  /** Tests point this at a directory of their own assets. */
  readonly assetsDir?: string;
}

export interface UiModule {
  /** The MLflow shell with flowgate's menu, the Manage screens, their assets, and (without OIDC) sign-in. */
  readonly ownRoute: OwnRoute;
  /** Without OIDC: the session credential for the sign-in page's sessions. */
  readonly loader: CredentialLoader | undefined;
  /**
   * A 401 for a browser: without OIDC a page load goes to the sign-in page; a page's own call gets
   * its 401 without the Basic challenge (no browser password dialog).
   */
  readonly onUnauthenticated: (req: IncomingMessage, res: ServerResponse) => boolean;
}

const API_PATH = /^\/(api|ajax-api)\//;

export function createUi(d: UiDeps): UiModule {
  const cookies = cookiePolicy(d.basePath, d.cookieSecure);
  const assets = d.assetsDir ? createAssets(d.assetsDir) : createAssets();
  const shell = createShell({ upstreamBase: d.upstreamBase, basePath: d.basePath, timeoutMs: d.upstreamTimeoutMs });
  const signIn = d.oidc ? undefined : createSignIn({ ...d, cookies });

  const relative = (req: IncomingMessage) => {
    const raw = req.url ?? '/';
    return d.basePath !== '' && raw.startsWith(d.basePath) ? raw.slice(d.basePath.length) : raw;
  };
  /** A top-level page load without any credential (never an API call or a form post). */
  const browserNavigation = (req: IncomingMessage): boolean => {
    const method = req.method ?? 'GET';
    if ((method !== 'GET' && method !== 'HEAD') || req.headers.authorization !== undefined) return false;
    const accept = req.headers.accept;
    return typeof accept === 'string' && accept.toLowerCase().includes('text/html') && !API_PATH.test(relative(req));
  };
  const toLogin = (req: IncomingMessage, res: ServerResponse): true => {
    req.resume();
    redirect(res, `${d.basePath}${UI_PATHS.login}?return_to=${encodeURIComponent(safeReturnTo(req.url ?? '/', d.basePath))}`);
    return true;
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, ctx: Parameters<OwnRoute>[2]): Promise<boolean> => {
    const method = req.method ?? 'GET';
    const readOnly = method === 'GET' || method === 'HEAD';
    if (ctx.path.startsWith(UI_PATHS.assets) && readOnly) {
      req.resume();
      if (assets.send(res, ctx.path.slice(UI_PATHS.assets.length), method === 'HEAD')) return true;
      return false;
    }
    if ((ctx.path === UI_PATHS.app || ctx.path === UI_PATHS.app.slice(0, -1)) && readOnly) {
      req.resume();
      const session = await sessionOf(req, d.sessions, cookies);
      if (!session) return toLogin(req, res);
      if (ctx.path !== UI_PATHS.app) {
        redirect(res, d.basePath + UI_PATHS.app);
        return true;
      }
      sendAppPage(res, d.basePath, session.csrfSecret, method === 'HEAD');
      return true;
    }
    // A request carrying credentials goes through authentication like any other (wrong ones get 401).
    if (ctx.path === '/' && readOnly && req.headers.authorization === undefined) {
      if (!d.oidc && browserNavigation(req) && !(await sessionOf(req, d.sessions, cookies))) return toLogin(req, res);
      req.resume();
      await shell(req, res, ctx.search);
      return true;
    }
    return signIn ? signIn(req, res, ctx) : false;
  };

  // Asked for every request before authentication: anything outside the UI shell and flowgate's own
  // pages is declined synchronously, so MLflow's calls pay no promise for it.
  const ownRoute: OwnRoute = (req, res, ctx) => (ctx.path === '/' || ctx.path.startsWith('/flowgate/') ? serve(req, res, ctx) : false);

  return {
    ownRoute,
    loader: d.oidc ? undefined : hostSessionLoader(d.sessions, d.principals, cookies),
    onUnauthenticated: (req, res) => (!d.oidc && browserNavigation(req) && toLogin(req, res)) || answerPageCall(req, res),
  };
}
