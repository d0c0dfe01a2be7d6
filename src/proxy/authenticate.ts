import type { IncomingMessage } from 'node:http';
import { unauthenticated } from '../errors.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { Principal } from '../principals/types.js';
import { MALFORMED, type TokenVerifier } from '../tokens/verifier.js';
import type { LegacyPasswordVerifier } from '../tokens/legacy-passwords.js';

import type { AuthOutcome, Authenticator, CredentialLoader } from '../http/credentials.js';

const ANONYMOUS: AuthOutcome = Object.freeze({ principal: undefined, method: 'none' });
const proven = (principal: Principal): AuthOutcome => ({ principal, method: principal.via });

/**
 * Tries the loaders in order. Synchronous while they are (Basic tokens, sessions: cache hits), so
 * an authenticated request costs no promise and no trip through the microtask queue.
 */
export function createAuthenticator(loaders: readonly CredentialLoader[]): Authenticator {
  async function continueAsync(req: IncomingMessage, pending: Promise<Principal | undefined>, next: number): Promise<AuthOutcome> {
    const principal = await pending;
    if (principal) return proven(principal);
    for (let i = next; i < loaders.length; i++) {
      const found = await loaders[i]!(req);
      if (found) return proven(found);
    }
    return ANONYMOUS;
  }
  return function authenticate(req: IncomingMessage): AuthOutcome | Promise<AuthOutcome> {
    for (let i = 0; i < loaders.length; i++) {
      const found = loaders[i]!(req);
      if (found instanceof Promise) return continueAsync(req, found, i + 1);
      if (found) return proven(found);
    }
    return ANONYMOUS;
  };
}

const BASIC = /^basic /i;

type Verified = (ReturnType<TokenVerifier['verifyEncoded']> extends infer V ? Exclude<V, Promise<unknown>> : never) | { readonly userId: number };

/**
 * HTTP Basic with username + access token, as the MLflow Python client sends it; with `legacy`, a
 * password imported from MLflow basic-auth too (tried only when no token matches; a remembered
 * success answers first, without I/O).
 */
export function basicTokenLoader(verifier: TokenVerifier, principals: PrincipalCache, legacy?: LegacyPasswordVerifier): CredentialLoader {
  const proveUser = (principal: Principal | undefined): Principal => {
    if (!principal) throw unauthenticated('Invalid username or access token');
    return principal;
  };
  // Synchronous while the token and the principal are cached: no promise on the hot path.
  const toPrincipal = (verified: Verified): Principal | Promise<Principal> => {
    if (verified === MALFORMED) throw unauthenticated('Malformed Basic credentials');
    if (!verified) throw unauthenticated('Invalid username or access token, or the token has expired or been revoked');
    const principal = principals.principal(verified.userId, 'basic');
    return principal instanceof Promise ? principal.then(proveUser) : proveUser(principal);
  };
  return (req) => {
    const header = req.headers.authorization;
    if (header === undefined || !BASIC.test(header)) return undefined;
    const encoded = header.slice(6).trim();
    if (legacy !== undefined) {
      const remembered = legacy.cached(encoded);
      if (remembered !== undefined) return toPrincipal(remembered);
      const verified = verifier.verifyEncoded(encoded);
      const orPassword = (v: Verified): Verified | Promise<Verified> => (v === undefined ? legacy.verify(encoded) : v);
      if (verified instanceof Promise) return verified.then(orPassword).then(toPrincipal);
      return verified === undefined ? legacy.verify(encoded).then(toPrincipal) : toPrincipal(verified);
    }
    const verified = verifier.verifyEncoded(encoded);
    return verified instanceof Promise ? verified.then(toPrincipal) : toPrincipal(verified);
  };
}
