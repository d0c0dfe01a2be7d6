import { LRUCache } from 'lru-cache';
import { constantTimeEqual, hashToken } from './token.js';
import type { TokenRepo } from './token-repo.js';

export interface VerifiedToken {
  readonly tokenId: number;
  readonly userId: number;
  readonly username: string;
  /** A session this token opens ends then too. */
  readonly expiresAt: number;
}

type CachedToken = VerifiedToken;

export interface TokenVerifierOptions {
  readonly repo: TokenRepo;
  readonly usernameOf: (userId: number) => string | undefined | Promise<string | undefined>;
  readonly cacheSize: number;
  readonly now?: () => number;
  readonly onCache?: (hit: boolean) => void;
  /** Told whenever cached credentials are dropped (a user's, or undefined: everyone's), for caches of other credentials to follow. */
  readonly onForget?: (userId: number | undefined) => void;
}

/** The Basic credentials did not decode to `username:token`. */
export const MALFORMED = Symbol('malformed Basic credentials');

/**
 * Basic username + token verification. The cache is keyed by the SHA-256 of the credentials exactly
 * as the client sent them (the base64 of `username:token`), so a hit costs one hash and a map
 * look-up: no decoding, no splitting, no username comparison. A hit needs a string that once
 * verified in full; the cache holds hashes, never a token. SQL runs only on a miss (the only case
 * that returns a Promise), and unknown credentials are not cached, so a freshly minted token works at once.
 */
export function createTokenVerifier(opts: TokenVerifierOptions) {
  const now = opts.now ?? Date.now;
  const cache = new LRUCache<string, CachedToken>({ max: opts.cacheSize });
  /** Bumped whenever tokens are forgotten: a look-up that started before must not cache what it read. */
  let generation = 0;

  async function verifyInFull(encoded: string): Promise<{ entry: CachedToken; canonical: boolean } | undefined | typeof MALFORMED> {
    const decoded = Buffer.from(encoded, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon <= 0) return MALFORMED;
    const rec = await opts.repo.findByHash(hashToken(decoded.slice(colon + 1)));
    if (!rec || rec.revokedAt !== null) return undefined;
    const username = await opts.usernameOf(rec.userId);
    if (username === undefined || !constantTimeEqual(username, decoded.slice(0, colon))) return undefined;
    // Node's decoder skips stray characters, so one credential has endless spellings; only the
    // standard one is remembered, lest one valid token crowd everyone else out of the cache.
    const canonical = Buffer.from(decoded, 'utf8').toString('base64') === encoded;
    return { entry: { tokenId: rec.id, userId: rec.userId, username, expiresAt: rec.expiresAt }, canonical };
  }

  async function verifyMiss(key: string, encoded: string): Promise<VerifiedToken | undefined | typeof MALFORMED> {
    const startedAt = generation;
    const full = await verifyInFull(encoded);
    if (full === undefined || full === MALFORMED) return full;
    if (full.entry.expiresAt <= now()) return undefined;
    if (full.canonical && startedAt === generation) cache.set(key, full.entry);
    return full.entry;
  }

  function verifyEncoded(encoded: string): VerifiedToken | undefined | typeof MALFORMED | Promise<VerifiedToken | undefined | typeof MALFORMED> {
    const key = hashToken(encoded);
    const cached = cache.get(key);
    opts.onCache?.(cached !== undefined);
    if (cached !== undefined) {
      if (cached.expiresAt > now()) return cached;
      cache.delete(key);
      return undefined;
    }
    return verifyMiss(key, encoded);
  }

  return {
    /** Credentials as sent in `Authorization: Basic <encoded>`. */
    verifyEncoded,
    /** Drops every cached token of a user: after revocation, rename or deletion. */
    forgetUser(userId: number): void {
      generation++;
      for (const [key, entry] of cache.entries()) if (entry.userId === userId) cache.delete(key);
      opts.onForget?.(userId);
    },
    /** Drops every cached token: the store was changed by another process. */
    forgetAll(): void {
      generation++;
      cache.clear();
      opts.onForget?.(undefined);
    },
    get size() {
      return cache.size;
    },
  };
}

export type TokenVerifier = ReturnType<typeof createTokenVerifier>;
