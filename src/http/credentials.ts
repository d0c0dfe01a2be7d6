import type { IncomingMessage } from 'node:http';
import type { Principal } from '../principals/types.js';

/**
 * A credential loader looks for one kind of credential. `undefined` = none of its kind present (the
 * next loader tries); a Principal = proven; a thrown 401 = present but wrong (no fallthrough, so a bad
 * token never silently becomes a session or anonymous request).
 */
export type CredentialLoader = (req: IncomingMessage) => Principal | undefined | Promise<Principal | undefined>;

export type AuthOutcome = { principal: Principal; method: Principal['via'] } | { principal: undefined; method: 'none' };

/** Runs the loaders in order; the first that proves a principal wins. */
export type Authenticator = (req: IncomingMessage) => AuthOutcome | Promise<AuthOutcome>;
