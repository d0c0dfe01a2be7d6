import { LRUCache } from 'lru-cache';
import type { Directory } from './directory.js';
import type { Principal } from './types.js';

type Identity = Omit<Principal, 'via'>;

/** userId → who they are (admin flag, groups), so an authenticated request costs no SQL. */
export function createPrincipalCache(directory: Directory, size: number, onCache?: (hit: boolean) => void) {
  const cache = new LRUCache<number, Identity>({ max: size });
  return {
    get(userId: number): Identity | undefined {
      const hit = cache.get(userId);
      onCache?.(hit !== undefined);
      if (hit) return hit;
      const user = directory.userById(userId);
      if (!user) return undefined;
      const identity: Identity = {
        userId: user.id,
        username: user.username,
        isAdmin: user.isAdmin,
        isServiceAccount: user.isServiceAccount,
        groupIds: Object.freeze(directory.groupIdsOfUser(user.id)),
      };
      cache.set(userId, identity);
      return identity;
    },
    invalidate(): void {
      cache.clear();
    },
  };
}

export type PrincipalCache = ReturnType<typeof createPrincipalCache>;
