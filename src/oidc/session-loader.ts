import type { IncomingMessage } from 'node:http';
import { forbidden } from '../errors.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { CredentialLoader } from '../http/credentials.js';
import { readCookie, type CookiePolicy } from './cookies.js';
import { csrfAllows, isStateChanging } from './csrf.js';
import type { LiveSession, SessionStore } from './sessions.js';

/** The session a request's cookie names, if it is live. */
export function sessionOf(req: IncomingMessage, store: SessionStore, cookies: CookiePolicy): LiveSession | undefined {
  const id = readCookie(req, cookies.session);
  return id === undefined ? undefined : store.validate(id);
}

/**
 * The browser-session credential loader. No cookie, or a cookie naming no live session (unknown,
 * tampered, expired, ended) = not proven: the request is treated as unauthenticated, so a browser
 * is sent to login again rather than shown an error. A state-changing request riding on a session
 * must pass the CSRF check, else 403.
 */
export function sessionLoader(store: SessionStore, principals: PrincipalCache, cookies: CookiePolicy, externalOrigin: string): CredentialLoader {
  return (req) => {
    const session = sessionOf(req, store, cookies);
    if (!session) return undefined;
    if (isStateChanging(req.method) && !csrfAllows(req, externalOrigin, session.csrfSecret))
      throw forbidden('Cross-site request refused: the Origin of this request is not this server');
    const principal = principals.principal(session.userId, 'session');
    return principal && !principal.isServiceAccount ? principal : undefined;
  };
}
