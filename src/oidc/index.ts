import type { ClusterNames } from '../bearer/cluster-names.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { OidcConfig } from '../config.js';
import type { Logger } from '../logging.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { OwnRoute } from '../http/own-route.js';
import type { CredentialLoader } from '../http/credentials.js';
import { createRateLimiter } from '../http/rate-limit.js';
import type { Sql } from '../store/sql.js';
import { createIdentityProvider, type IdentityProvider } from './client.js';
import { EMAIL_CLAIM } from './claims.js';
import { cookiePolicy } from './cookies.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import { provisionLogin } from './provision.js';
import { safeReturnTo } from './return-to.js';
import { createOidcRoutes, LOGIN_TTL_MS, OIDC_PATHS } from './routes.js';
import { sessionLoader, sessionOf } from './session-loader.js';
import { createPendingLogins, type SessionStore } from './sessions.js';

export { createSessionStore, type SessionStore } from './sessions.js';

export interface OidcDeps {
  readonly config: OidcConfig & { readonly redirectUrl: string };
  readonly basePath: string;
  readonly cookieSecure: boolean;
  readonly absoluteMs: number;
  readonly sql: Sql;
  readonly directory: Directory;
  /** Where a login's user, groups and memberships are written (each change audited). */
  readonly principalWriter: PrincipalWriter;
  readonly principals: PrincipalCache;
  readonly sessions: SessionStore;
  /** Memberships or admin flag changed at a login: drop the principal and policy caches. */
  readonly policyChanged: () => void | Promise<void>;
  readonly logger: Logger;
  /** The bootstrap admin, never demoted by the admin-role sync. */
  readonly protectedAdmin: string | undefined;
  /** The names only a kubernetes bearer issuer makes. */
  readonly clusterNames?: ClusterNames | undefined;
  /** Replaces the real provider (tests). */
  readonly provider?: IdentityProvider;
  readonly now?: () => number;
  readonly purgeEveryMs?: number;
}

export interface OidcModule {
  readonly ownRoute: OwnRoute;
  readonly loader: CredentialLoader;
  /** For a browser navigation without a credential: redirect to login and answer true. */
  readonly onUnauthenticated: (req: IncomingMessage, res: ServerResponse) => boolean;
  close(): void;
}

const API_PATH = /^\/(api|ajax-api)\//;

/**
 * Sign-ins a flowgate starts, all clients together (behind an ingress every client has its address):
 * far above what people signing in need, and a bound on the pending logins a flood writes between two
 * purges (10 minutes: at most some 12,000 rows, not one per request).
 */
const LOGIN_STARTS = { perSecond: 20, burst: 200, maxClients: 1 };

/** OIDC login for the MLflow UI: built once from the validated config by the composition root. */
export function createOidc(d: OidcDeps): OidcModule {
  const cookies = cookiePolicy(d.basePath, d.cookieSecure);
  const externalOrigin = new URL(d.config.redirectUrl).origin;
  const provider =
    d.provider ??
    createIdentityProvider({
      issuerUrl: d.config.issuerUrl,
      clientId: d.config.clientId,
      clientSecret: d.config.clientSecret,
      redirectUrl: d.config.redirectUrl,
      scopes: d.config.scopes,
    });
  provider.warmUp?.();
  const pending = createPendingLogins(d.sql, LOGIN_TTL_MS, d.now);
  if (d.config.usernameClaim === EMAIL_CLAIM && d.config.allowUnverifiedEmail)
    d.logger.warn(
      { setting: 'FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL' },
      "user names are email addresses the identity provider need not have verified: anyone who can set an address there can sign in as the user of that name, unless the provider only lets its own domain's verified addresses be set",
    );
  const provisionOptions = {
    usernameClaim: d.config.usernameClaim,
    allowUnverifiedEmail: d.config.allowUnverifiedEmail,
    displayNameClaim: d.config.displayNameClaim,
    groupsClaim: d.config.groupsClaim,
    adminRole: d.config.adminRole,
    allowedRoles: d.config.allowedRoles,
    protectedAdmin: d.protectedAdmin,
    clusterNames: d.clusterNames,
  };

  const pages = createOidcRoutes({
    basePath: d.basePath,
    redirectUrl: d.config.redirectUrl,
    externalOrigin,
    provider,
    sessions: d.sessions,
    pending,
    cookies,
    sessionMaxAgeSeconds: Math.floor(d.absoluteMs / 1000),
    loginStarts: createRateLimiter(LOGIN_STARTS),
    // With the name from `email`, its `email_verified` is needed too: fetched from userinfo when the ID token lacks it.
    neededClaims: [d.config.usernameClaim, d.config.displayNameClaim, d.config.groupsClaim, ...(d.config.usernameClaim === EMAIL_CLAIM && !d.config.allowUnverifiedEmail ? ['email_verified'] : [])],
    groupsClaim: d.config.groupsClaim,
    provision: async (claims) => {
      const result = await provisionLogin(d.sql, d.directory, d.principalWriter, provisionOptions, claims);
      if (result.ok && result.changed) await d.policyChanged();
      return result;
    },
    logger: d.logger,
    usernameOf: async (id) => (await d.principals.get(id))?.username,
  });

  /** A top-level browser page load without any credential (never an API call or a form post). */
  const browserNavigation = (req: IncomingMessage): boolean => {
    const method = req.method ?? 'GET';
    if (method !== 'GET' && method !== 'HEAD') return false;
    if (req.headers.authorization !== undefined) return false;
    const accept = req.headers.accept;
    if (typeof accept !== 'string' || !accept.toLowerCase().includes('text/html')) return false;
    const raw = req.url ?? '/';
    const rel = d.basePath !== '' && raw.startsWith(d.basePath) ? raw.slice(d.basePath.length) : raw;
    return !API_PATH.test(rel);
  };
  const toLogin = (req: IncomingMessage, res: ServerResponse): true => {
    const returnTo = safeReturnTo(req.url ?? '/', d.basePath);
    req.resume();
    res.writeHead(302, {
      Location: `${d.basePath}${OIDC_PATHS.login}?return_to=${encodeURIComponent(returnTo)}`,
      'Cache-Control': 'no-store',
      'Content-Length': 0,
    });
    res.end();
    return true;
  };

  /**
   * flowgate's pages, plus the MLflow UI's entry page: MLflow serves it to anyone (a public route),
   * so a browser opening it without a session is sent to login here, before the gate.
   */
  const ownRoute: OwnRoute = (req, res, ctx) => {
    if (ctx.path === '/' && browserNavigation(req)) {
      const session = sessionOf(req, d.sessions, cookies);
      if (session instanceof Promise) return session.then((s) => (s ? pages(req, res, ctx) : toLogin(req, res)));
      if (!session) return toLogin(req, res);
    }
    return pages(req, res, ctx);
  };

  const purge = async () => {
    try {
      await d.sessions.purgeExpired();
      await pending.purgeExpired();
    } catch (e) {
      d.logger.warn({ err: { message: (e as Error).message } }, 'session purge failed');
    }
  };
  void purge();
  const timer = setInterval(purge, d.purgeEveryMs ?? 10 * 60_000);
  timer.unref();

  return {
    ownRoute,
    loader: sessionLoader(d.sessions, d.principals, cookies, externalOrigin),
    onUnauthenticated: (req, res) => browserNavigation(req) && toLogin(req, res),
    close() {
      clearInterval(timer);
    },
  };
}
