import type { IncomingMessage } from 'node:http';
import { unauthenticated } from '../errors.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { Principal } from '../principals/types.js';
import type { TokenVerifier } from '../tokens/verifier.js';

/**
 * A credential loader looks for one kind of credential. `undefined` = none of its kind present (the
 * next loader tries); a Principal = proven; a thrown 401 = present but wrong (no fallthrough, so a bad
 * token never silently becomes a session or anonymous request).
 */
export type CredentialLoader = (req: IncomingMessage) => Principal | undefined | Promise<Principal | undefined>;

export type AuthOutcome = { principal: Principal; method: Principal['via'] } | { principal: undefined; method: 'none' };

export function createAuthenticator(loaders: readonly CredentialLoader[]) {
  return async function authenticate(req: IncomingMessage): Promise<AuthOutcome> {
    for (const load of loaders) {
      const principal = await load(req);
      if (principal) return { principal, method: principal.via };
    }
    return { principal: undefined, method: 'none' };
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;

/** HTTP Basic with username + access token, as the MLflow Python client sends it. */
export function basicTokenLoader(verifier: TokenVerifier, principals: PrincipalCache): CredentialLoader {
  return (req) => {
    const header = req.headers.authorization;
    if (header === undefined || !/^basic /i.test(header)) return undefined;
    const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) throw unauthenticated('Malformed Basic credentials');
    const verified = verifier.verify(decoded.slice(0, colon), decoded.slice(colon + 1));
    if (!verified) throw unauthenticated('Invalid username or access token, or the token has expired or been revoked');
    const identity = principals.get(verified.userId);
    if (!identity) throw unauthenticated('Invalid username or access token');
    return { ...identity, via: 'basic' };
  };
}
