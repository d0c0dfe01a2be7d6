import { forbidden } from '../errors.js';
import type { CookiePolicy } from '../oidc/cookies.js';
import { CSRF_HEADER, isStateChanging } from '../oidc/csrf.js';
import type { IncomingMessage } from 'node:http';
import { personOf, sessionOf } from '../oidc/session-loader.js';
import type { LiveSession, SessionStore } from '../oidc/sessions.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { CredentialLoader } from '../http/credentials.js';
import { constantTimeEqual } from '../tokens/token.js';
import { fromThisHost } from '../http/same-origin.js';

/**
 * The browser-session credential when flowgate signs people in itself (no OIDC, so no configured
 * external origin): the same server-side sessions as OIDC's, and every state-changing request must
 * come from a page of this host and carry the session's CSRF token (flowgate's UI sends it; MLflow's
 * own UI sends a same-origin `Origin`, which is accepted alone as with OIDC).
 */
export function hostSessionLoader(store: SessionStore, principals: PrincipalCache, cookies: CookiePolicy): CredentialLoader {
  const check = (req: IncomingMessage, session: LiveSession | undefined) => {
    if (!session) return undefined;
    if (isStateChanging(req.method)) {
      const token = req.headers[CSRF_HEADER];
      const tokenOk = typeof token === 'string' && token !== '' && constantTimeEqual(token, session.csrfSecret);
      const hasOrigin = typeof req.headers.origin === 'string' || typeof req.headers.referer === 'string';
      if (hasOrigin ? !fromThisHost(req) : !tokenOk)
        throw forbidden('Cross-site request refused: the Origin of this request is not this server');
    }
    return personOf(principals.principal(session.userId, 'session'));
  };
  // Synchronous while the session and the principal are cached.
  return (req) => {
    const session = sessionOf(req, store, cookies);
    return session instanceof Promise ? session.then((s) => check(req, s)) : check(req, session);
  };
}
