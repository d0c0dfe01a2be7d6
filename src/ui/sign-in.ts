import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../logging.js';
import { clearCookie, readCookie, setCookie, type CookiePolicy } from '../oidc/cookies.js';
import { esc, redirect } from '../oidc/pages.js';
import { homeOf, safeReturnTo } from '../oidc/return-to.js';
import type { SessionStore } from '../oidc/sessions.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { OwnRoute } from '../http/own-route.js';
import { readBody } from '../http/body.js';
import { MALFORMED, type TokenVerifier } from '../tokens/verifier.js';
import { sendUiPage } from './page.js';
import { UI_PATHS } from './paths.js';
import { fromThisHost } from '../http/same-origin.js';

export interface SignInDeps {
  readonly basePath: string;
  readonly cookies: CookiePolicy;
  readonly sessions: SessionStore;
  readonly verifier: TokenVerifier;
  readonly principals: PrincipalCache;
  readonly sessionMaxAgeSeconds: number;
  readonly logger: Logger;
}

const FORM_LIMIT = 8 * 1024;

/**
 * Sign-in without an identity provider: user name + access token, checked exactly as the Basic
 * credential of an API call, opening the same server-side session an OIDC login opens.
 */
export function createSignIn(d: SignInDeps): OwnRoute {
  const at = (p: string) => d.basePath + p;

  function form(res: ServerResponse, status: number, returnTo: string, problem?: string, username = ''): void {
    sendUiPage(res, status, {
      basePath: d.basePath,
      title: 'Sign in to MLflow',
      script: 'sign-in.js',
      body: `${problem ? `<p class="fg-error" role="alert">${esc(problem)}</p>` : ''}
<form method="post" action="${esc(at(UI_PATHS.login))}" class="fg-form">
<input type="hidden" name="return_to" value="${esc(returnTo)}">
<label for="username">User name</label>
<input id="username" name="username" autocomplete="username" required value="${esc(username)}">
<label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit" class="fg-button fg-primary">Sign in</button>
</form>
<p class="fg-muted">Your access token is the one an administrator gave you, or one you created under "My access key".</p>`,
    });
  }

  async function submit(req: IncomingMessage, res: ServerResponse, requestId: string): Promise<void> {
    const fields = new URLSearchParams((await readBody(req, FORM_LIMIT)).toString('utf8'));
    const returnTo = safeReturnTo(fields.get('return_to'), d.basePath);
    if (!fromThisHost(req)) return form(res, 403, returnTo, 'This sign-in came from another site and was refused.');
    const username = (fields.get('username') ?? '').trim();
    const token = (fields.get('token') ?? '').trim();
    const answer = username && token ? await d.verifier.verifyEncoded(Buffer.from(`${username}:${token}`).toString('base64')) : undefined;
    const verified = answer === MALFORMED ? undefined : answer;
    const principal = verified && (await d.principals.principal(verified.userId, 'session'));
    if (!verified || !principal) {
      // Not the name typed: a token pasted into the wrong field would land in the log.
      d.logger.warn({ requestId }, 'ui sign-in refused');
      return form(res, 401, returnTo, 'Unknown user name or access token, or the token has expired.', username);
    }
    if (principal.isServiceAccount)
      return form(res, 403, returnTo, 'Service accounts use access tokens with the API and cannot sign in to the UI.', username);
    const previous = readCookie(req, d.cookies.session);
    if (previous !== undefined) await d.sessions.destroy(previous);
    const { id, session } = await d.sessions.create(principal.userId, { token: { id: verified.tokenId, expiresAt: verified.expiresAt } });
    d.logger.info({ requestId, user: principal.username }, 'ui sign-in');
    const maxAge = Math.min(d.sessionMaxAgeSeconds, Math.floor((session.expiresAt - session.createdAt) / 1000));
    redirect(res, returnTo, { 'Set-Cookie': setCookie(d.cookies, d.cookies.session, id, maxAge) });
  }

  /** GET only asks: a link or an image on another site must not sign anyone out. */
  function confirmLogout(req: IncomingMessage, res: ServerResponse): void {
    sendUiPage(res, 200, {
      basePath: d.basePath,
      title: 'Sign out',
      head: req.method === 'HEAD',
      body: `<p>Sign out of MLflow?</p>
<form method="post" action="${esc(at(UI_PATHS.logout))}" class="fg-form"><button type="submit" class="fg-button fg-primary">Sign out</button></form>
<p><a href="${esc(homeOf(d.basePath))}">Back to MLflow</a></p>`,
    });
  }

  async function logout(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!fromThisHost(req))
      return sendUiPage(res, 403, { basePath: d.basePath, title: 'Sign-out refused', body: '<p>This sign-out request came from another site.</p>' });
    const id = readCookie(req, d.cookies.session);
    if (id !== undefined) await d.sessions.destroy(id);
    redirect(res, at(UI_PATHS.loggedOut), { 'Set-Cookie': clearCookie(d.cookies, d.cookies.session) });
  }

  return async (req, res, ctx) => {
    const method = req.method ?? 'GET';
    if (ctx.path === UI_PATHS.login) {
      if (method === 'POST') return submit(req, res, ctx.requestId).then(() => true);
      req.resume();
      form(res, 200, safeReturnTo(new URLSearchParams(ctx.search).get('return_to'), d.basePath));
      return true;
    }
    if (ctx.path === UI_PATHS.logout) {
      req.resume();
      if (method === 'POST') await logout(req, res);
      else if (method === 'GET' || method === 'HEAD') confirmLogout(req, res);
      else
        sendUiPage(
          res,
          405,
          { basePath: d.basePath, title: 'Method not allowed', body: `<p>${esc(UI_PATHS.logout)} does not accept ${esc(method)}.</p>` },
          { Allow: 'GET, HEAD, POST' },
        );
      return true;
    }
    if (ctx.path === UI_PATHS.loggedOut) {
      req.resume();
      sendUiPage(res, 200, {
        basePath: d.basePath,
        title: 'You are signed out',
        body: `<p>Your session has ended.</p><p><a class="fg-button fg-primary" href="${esc(at(UI_PATHS.login))}?return_to=${encodeURIComponent(homeOf(d.basePath))}">Sign in again</a></p>`,
      });
      return true;
    }
    return false;
  };
}
