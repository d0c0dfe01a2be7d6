import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomNonce, randomPKCECodeVerifier, randomState } from 'openid-client';
import type { Logger } from '../logging.js';
import type { OwnRoute } from '../http/own-route.js';
import type { RateLimiter } from '../http/rate-limit.js';
import { LoginRejected, ProviderUnavailable, type IdentityProvider } from './client.js';
import { clearCookie, readCookie, setCookie, type CookiePolicy } from './cookies.js';
import { CSRF_HEADER, csrfAllows } from './csrf.js';
import { esc, messagePage, redirect, sendPage } from './pages.js';
import type { ProvisionResult } from './provision.js';
import { homeOf, safeReturnTo } from './return-to.js';
import { sessionOf } from './session-loader.js';
import { randomId, sha256, type PendingLogins, type SessionStore } from './sessions.js';
import type { Claims } from './claims.js';

/** flowgate's own OIDC pages, relative to the base path. */
export const OIDC_PATHS = {
  login: '/flowgate/login',
  callback: '/flowgate/callback',
  logout: '/flowgate/logout',
  loggedOut: '/flowgate/logged-out',
  accessKey: '/flowgate/access-key',
} as const;

export const LOGIN_TTL_MS = 10 * 60_000;

export interface OidcRouteDeps {
  readonly basePath: string;
  readonly redirectUrl: string;
  readonly externalOrigin: string;
  readonly provider: IdentityProvider;
  readonly sessions: SessionStore;
  readonly pending: PendingLogins;
  readonly cookies: CookiePolicy;
  readonly sessionMaxAgeSeconds: number;
  /** Claim paths the login needs (fetched from userinfo when the ID token lacks them). */
  readonly neededClaims: readonly string[];
  /** Where roles are read from; a login that yields none is logged as a warning naming it. */
  readonly groupsClaim?: string;
  readonly provision: (claims: Claims) => Promise<ProvisionResult>;
  readonly logger: Logger;
  readonly usernameOf: (userId: number) => string | undefined | Promise<string | undefined>;
  /** Sign-ins started, on this flowgate: each one writes a pending login to the store before anyone is known. */
  readonly loginStarts: RateLimiter;
}

type Handler = (req: IncomingMessage, res: ServerResponse, ctx: { search: string; requestId: string }) => Promise<void> | void;

const REFUSALS: Record<Exclude<ProvisionResult, { ok: true }>['reason'], { title: string; message: string }> = {
  no_username: {
    title: 'Sign-in incomplete',
    message: 'The identity provider did not send a user name for your account. Ask an administrator to check the provider settings.',
  },
  bad_username: {
    title: 'Sign-in refused',
    message: 'Your user name at the identity provider is not one this service accepts (letters, digits and . _ @ + - only).',
  },
  unverified_email: {
    title: 'Email address not verified',
    message:
      'Your user name here is your email address, and the identity provider has not verified it yet. ' +
      'Verify the address with the identity provider (or ask its administrator to), then sign in again.',
  },
  service_account: {
    title: 'Service accounts cannot sign in',
    message: 'This name belongs to a service account. Service accounts use access tokens with the API and never sign in to the UI.',
  },
  role_not_allowed: {
    title: 'Access not granted',
    message: 'Your account does not hold a role that may use this service. Ask an administrator to grant you one, then sign in again.',
  },
  no_subject: {
    title: 'Sign-in incomplete',
    message: 'The identity provider did not say which account signed in (no issuer or subject). Ask an administrator to check the provider settings.',
  },
  disabled: {
    title: 'Account disabled',
    message: 'Your account here is disabled. Ask an administrator to enable it.',
  },
  // The same words whoever holds the name, so a sign-in learns nothing about them.
  name_taken: {
    title: 'Account not linked',
    message:
      'Your user name is already used here by another account, so signing in could not continue and nothing was changed. ' +
      'If that account is yours, ask an administrator to link it to your sign-in.',
  },
};

export function createOidcRoutes(d: OidcRouteDeps): OwnRoute {
  const home = homeOf(d.basePath);
  const at = (p: string) => d.basePath + p;
  const loginHref = (returnTo: string) => `${at(OIDC_PATHS.login)}?return_to=${encodeURIComponent(returnTo)}`;
  const again = { href: at(OIDC_PATHS.login), text: 'Sign in again' };
  const ID = /^[A-Za-z0-9_-]{43}$/;

  const login: Handler = async (req, res, ctx) => {
    // Anyone may start a sign-in, and each start is a row in the store: a flood must not hold the store's writes from everyone else's.
    const wait = d.loginStarts.take('every client');
    if (wait > 0)
      return sendPage(res, 503, messagePage('Too many sign-ins at once', 'More sign-ins are starting than this service takes in at once. Please try again in a moment.', again), {
        'Retry-After': String(wait),
      });
    const returnTo = safeReturnTo(new URLSearchParams(ctx.search).get('return_to'), d.basePath);
    const existing = readCookie(req, d.cookies.binding);
    const binding = existing !== undefined && ID.test(existing) ? existing : randomId();
    const checks = { state: randomState(), nonce: randomNonce(), codeVerifier: randomPKCECodeVerifier() };
    let target: URL;
    try {
      target = await d.provider.authorizationUrl(checks);
    } catch (e) {
      return providerDown(res, e, ctx.requestId);
    }
    await d.pending.put(checks.state, { nonce: checks.nonce, codeVerifier: checks.codeVerifier, returnTo, bindingHash: sha256(binding) });
    redirect(res, target.href, { 'Set-Cookie': setCookie(d.cookies, d.cookies.binding, binding, LOGIN_TTL_MS / 1000) });
  };

  const callback: Handler = async (req, res, ctx) => {
    const params = new URLSearchParams(ctx.search);
    const state = params.get('state');
    const pending = state ? await d.pending.take(state) : undefined;
    if (!state || !pending)
      return sendPage(res, 400, messagePage('Sign-in link expired', 'This sign-in response was already used, has expired, or was never started here. Please sign in again.', again));
    const binding = readCookie(req, d.cookies.binding);
    if (binding === undefined || sha256(binding) !== pending.bindingHash)
      return sendPage(res, 400, messagePage('Sign-in not started in this browser', 'This sign-in response belongs to a sign-in started elsewhere. Please sign in again from this browser.', again));

    const url = new URL(d.redirectUrl);
    url.search = ctx.search;
    let claims: Claims;
    let idToken: string | undefined;
    try {
      ({ claims, idToken } = await d.provider.finishLogin(url, { state, nonce: pending.nonce, codeVerifier: pending.codeVerifier }, d.neededClaims));
    } catch (e) {
      if (e instanceof LoginRejected) {
        d.logger.warn({ requestId: ctx.requestId, code: e.code }, 'oidc login rejected');
        return sendPage(res, 400, messagePage('Sign-in failed', `The sign-in could not be completed (${e.code}). Please try again.`, again));
      }
      return providerDown(res, e, ctx.requestId, 502);
    }

    const result = await d.provision(claims);
    if (!result.ok) {
      d.logger.warn({ requestId: ctx.requestId, reason: result.reason, user: result.username, holder: result.holder }, 'oidc login refused');
      const r = REFUSALS[result.reason];
      return sendPage(res, 403, messagePage(r.title, r.message), { 'Set-Cookie': clearCookie(d.cookies, d.cookies.binding) });
    }
    const previous = readCookie(req, d.cookies.session);
    if (previous !== undefined) await d.sessions.destroy(previous);
    const { id } = await d.sessions.create(result.user.id, { idToken });
    d.logger.info({ requestId: ctx.requestId, user: result.user.username, groups: result.roles.length }, 'oidc login');
    // Most often the provider does not put roles where flowgate reads them (Keycloak's realm roles
    // are in neither the ID token nor userinfo until a mapper adds them): say so, naming no values.
    if (result.roles.length === 0 && d.groupsClaim)
      d.logger.warn(
        { requestId: ctx.requestId, user: result.user.username, groupsClaim: d.groupsClaim, claimsPresent: Object.keys(claims).sort() },
        'oidc login yielded no groups: the groups claim is missing or empty (docs/oidc.md)',
      );
    redirect(res, safeReturnTo(pending.returnTo, d.basePath), {
      'Set-Cookie': [setCookie(d.cookies, d.cookies.session, id, d.sessionMaxAgeSeconds), clearCookie(d.cookies, d.cookies.binding)],
    });
  };

  /** GET only asks: a link or an image on another site must not sign anyone out (as oauth2-proxy's sign_out page). */
  const confirmLogout: Handler = (_req, res) =>
    sendPage(res, 200, {
      title: 'Sign out',
      body: `<p>Sign out of MLflow?</p>
<form method="post" action="${esc(at(OIDC_PATHS.logout))}"><button type="submit">Sign out</button></form>
<p><a href="${esc(home)}">Back to MLflow</a></p>`,
    });

  const logout: Handler = async (req, res) => {
    const id = readCookie(req, d.cookies.session);
    const s = id !== undefined ? await d.sessions.validate(id) : undefined;
    // Without a session only the page's Origin (or Referer) can pass: the provider's logout follows, and that is a change too.
    if (!csrfAllows(req, d.externalOrigin, s?.csrfSecret ?? ''))
      return sendPage(res, 403, messagePage('Sign-out refused', 'This sign-out request came from another site.'));
    const idToken = id !== undefined ? await d.sessions.destroy(id) : undefined;
    const after = d.externalOrigin + at(OIDC_PATHS.loggedOut);
    const target = (await d.provider.endSessionUrl(after, idToken))?.href;
    const cleared = { 'Set-Cookie': clearCookie(d.cookies, d.cookies.session) };
    if (target === undefined) return redirect(res, at(OIDC_PATHS.loggedOut), cleared);
    // A sign-out form's page holds "form-action 'self'", which browsers apply to where the form's answer
    // redirects too: a page of this origin goes on to the provider instead.
    sendPage(
      res,
      200,
      {
        title: 'Signing out',
        body: `<p>Your session here has ended; signing you out at the identity provider.</p>
<p><a id="continue" class="button" href="${esc(target)}">Continue</a></p>`,
        script: "location.replace(document.getElementById('continue').href);",
      },
      cleared,
    );
  };

  const loggedOut: Handler = (_req, res) =>
    sendPage(res, 200, messagePage('You are signed out', 'Your session has ended.', { href: home, text: 'Sign in again' }));

  const accessKey: Handler = async (req, res) => {
    const s = await sessionOf(req, d.sessions, d.cookies);
    const username = s && (await d.usernameOf(s.userId));
    if (!s || !username) return redirect(res, loginHref(at(OIDC_PATHS.accessKey)));
    const endpoint = at('/ajax-api/2.0/mlflow/permissions/users/access-token');
    const trackingUri = d.externalOrigin + d.basePath;
    sendPage(res, 200, {
      title: 'Create access key',
      body: `<p>Signed in as <strong id="username">${esc(username)}</strong>.</p>
<p>An access key lets the MLflow client and scripts act as you (HTTP Basic: your user name and the key).
It is shown <strong>once</strong>: save it now. Creating a new key makes your previous key stop working.</p>
<p><button id="create" type="button">Create access key</button></p>
<div id="result" hidden>
<p>Your access key (expires <span id="expires"></span>):</p>
<pre><code id="token"></code></pre>
<p>Use it with the MLflow client:</p>
<pre><code id="usage"></code></pre>
</div>
<p id="error" role="alert" hidden></p>
<p><a href="${esc(home)}">Back to MLflow</a></p>
<form method="post" action="${esc(at(OIDC_PATHS.logout))}"><button type="submit">Sign out</button></form>`,
      script: `
const btn = document.getElementById('create');
btn.addEventListener('click', async () => {
  btn.disabled = true;
  const err = document.getElementById('error');
  err.hidden = true;
  try {
    const r = await fetch(${JSON.stringify(endpoint)}, {
      method: 'PATCH', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', ${JSON.stringify(CSRF_HEADER)}: ${JSON.stringify(s.csrfSecret)} },
      body: '{}',
    });
    const body = await r.json();
    if (!r.ok) throw new Error(body.message || ('HTTP ' + r.status));
    document.getElementById('token').textContent = body.token;
    document.getElementById('expires').textContent = body.expiration;
    document.getElementById('usage').textContent =
      'export MLFLOW_TRACKING_URI=' + ${JSON.stringify(trackingUri)} + '\\n' +
      'export MLFLOW_TRACKING_USERNAME=' + body.username + '\\n' +
      'export MLFLOW_TRACKING_PASSWORD=<the key above>';
    document.getElementById('result').hidden = false;
  } catch (e) {
    err.textContent = 'Could not create an access key: ' + e.message;
    err.hidden = false;
  } finally {
    btn.disabled = false;
  }
});`,
    });
  };

  function providerDown(res: ServerResponse, e: unknown, requestId: string, status = 503): void {
    const reason = e instanceof ProviderUnavailable ? e.message : 'unexpected error';
    d.logger.warn({ requestId, reason }, 'oidc provider unavailable');
    sendPage(
      res,
      status,
      messagePage(
        'Sign-in is temporarily unavailable',
        'The identity provider cannot be reached right now, so signing in is not possible. If you are already signed in, your session keeps working. Please try again in a minute.',
        again,
      ),
      { 'Retry-After': '30' },
    );
  }

  const table = new Map<string, { methods: readonly string[]; handler: Handler }>([
    [OIDC_PATHS.login, { methods: ['GET'], handler: login }],
    [OIDC_PATHS.callback, { methods: ['GET'], handler: callback }],
    [OIDC_PATHS.logout, { methods: ['GET', 'HEAD', 'POST'], handler: (req, res, ctx) => (req.method === 'POST' ? logout(req, res, ctx) : confirmLogout(req, res, ctx)) }],
    [OIDC_PATHS.loggedOut, { methods: ['GET', 'HEAD'], handler: loggedOut }],
    [OIDC_PATHS.accessKey, { methods: ['GET', 'HEAD'], handler: accessKey }],
  ]);

  return async (req, res, ctx) => {
    const route = table.get(ctx.path);
    if (!route) return false;
    if (!route.methods.includes(req.method ?? 'GET')) {
      req.resume();
      sendPage(res, 405, messagePage('Method not allowed', `${ctx.path} does not accept ${req.method ?? ''}.`), { Allow: route.methods.join(', ') });
      return true;
    }
    req.resume();
    await route.handler(req, res, ctx);
    return true;
  };
}
