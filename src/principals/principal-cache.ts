import { LRUCache } from 'lru-cache';
import type { Directory } from './directory.js';
import type { Principal } from './types.js';

type Identity = Omit<Principal, 'via'>;

interface Entry {
  readonly identity: Identity;
  /** The principal per way of signing in, made once per cached identity rather than on every request. */
  readonly as: Partial<Record<Principal['via'], Principal>>;
}

/** userId → who they are (admin flag, groups), so an authenticated request costs no SQL. */
export function createPrincipalCache(directory: Directory, size: number, onCache?: (hit: boolean) => void) {
  const cache = new LRUCache<number, Entry>({ max: size });

  function entry(userId: number): Entry | undefined {
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
    const made = { identity, as: {} };
    cache.set(userId, made);
    return made;
  }

  return {
    get(userId: number): Identity | undefined {
      return entry(userId)?.identity;
    },
    /** The user as a principal signed in by `via`; the same object until the cache is invalidated. */
    principal(userId: number, via: Principal['via']): Principal | undefined {
      const e = entry(userId);
      if (!e) return undefined;
      return (e.as[via] ??= { ...e.identity, via });
    },
    invalidate(): void {
      cache.clear();
    },
  };
}

export type PrincipalCache = ReturnType<typeof createPrincipalCache>;
