import { LRUCache } from 'lru-cache';
import { constantTimeEqual, hashToken } from './token.js';
import type { TokenRepo } from './token-repo.js';

export interface VerifiedToken {
  readonly tokenId: number;
  readonly userId: number;
  readonly username: string;
}

interface CachedToken {
  readonly tokenId: number;
  readonly userId: number;
  readonly username: string;
  readonly expiresAt: number;
}

export interface TokenVerifierOptions {
  readonly repo: TokenRepo;
  readonly usernameOf: (userId: number) => string | undefined;
  readonly cacheSize: number;
  readonly now?: () => number;
  readonly onCache?: (hit: boolean) => void;
}

/**
 * Basic username + token verification. A hit costs one SHA-256 and a map look-up; SQL runs only on a
 * miss. Unknown hashes are not cached, so a freshly minted token works at once.
 */
export function createTokenVerifier(opts: TokenVerifierOptions) {
  const now = opts.now ?? Date.now;
  const cache = new LRUCache<string, CachedToken>({ max: opts.cacheSize });

  function load(hash: string): CachedToken | undefined {
    const rec = opts.repo.findByHash(hash);
    if (!rec || rec.revokedAt !== null) return undefined;
    const username = opts.usernameOf(rec.userId);
    if (username === undefined) return undefined;
    const entry = { tokenId: rec.id, userId: rec.userId, username, expiresAt: rec.expiresAt };
    cache.set(hash, entry);
    return entry;
  }

  return {
    verify(username: string, token: string): VerifiedToken | undefined {
      const hash = hashToken(token);
      let entry = cache.get(hash);
      opts.onCache?.(entry !== undefined);
      entry ??= load(hash);
      if (!entry) return undefined;
      if (entry.expiresAt <= now()) {
        cache.delete(hash);
        return undefined;
      }
      if (!constantTimeEqual(entry.username, username)) return undefined;
      return { tokenId: entry.tokenId, userId: entry.userId, username: entry.username };
    },
    /** Drops every cached token of a user: after revocation, rename or deletion. */
    forgetUser(userId: number): void {
      for (const [hash, entry] of cache.entries()) if (entry.userId === userId) cache.delete(hash);
    },
    /** Drops every cached token: the store was changed by another process. */
    forgetAll(): void {
      cache.clear();
    },
    get size() {
      return cache.size;
    },
  };
}

export type TokenVerifier = ReturnType<typeof createTokenVerifier>;
