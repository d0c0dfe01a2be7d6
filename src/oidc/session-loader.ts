import type { IncomingMessage } from 'node:http';
import { forbidden } from '../errors.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { Principal } from '../principals/types.js';
import type { CredentialLoader } from '../http/credentials.js';
import { readCookie, type CookiePolicy } from './cookies.js';
import { csrfAllows, isStateChanging } from './csrf.js';
import type { LiveSession, SessionStore } from './sessions.js';

const person = (p: Principal | undefined) => (p && !p.isServiceAccount ? p : undefined);

/** A session's principal, unless a service account (which never signs in to the UI). */
export function personOf(p: Principal | undefined | Promise<Principal | undefined>): Principal | undefined | Promise<Principal | undefined> {
  return p instanceof Promise ? p.then(person) : person(p);
}

/** The session a request's cookie names, if it is live. */
export function sessionOf(req: IncomingMessage, store: SessionStore, cookies: CookiePolicy): LiveSession | undefined | Promise<LiveSession | undefined> {
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
  const check = (req: IncomingMessage, session: LiveSession | undefined) => {
    if (!session) return undefined;
    if (isStateChanging(req.method) && !csrfAllows(req, externalOrigin, session.csrfSecret))
      throw forbidden('Cross-site request refused: the Origin of this request is not this server');
    return personOf(principals.principal(session.userId, 'session'));
  };
  // Synchronous while the session and the principal are cached.
  return (req) => {
    const session = sessionOf(req, store, cookies);
    return session instanceof Promise ? session.then((s) => check(req, s)) : check(req, session);
  };
}
