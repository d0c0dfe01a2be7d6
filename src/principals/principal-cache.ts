import { LRUCache } from 'lru-cache';
import type { Directory } from './directory.js';
import type { Principal } from './types.js';

type Identity = Omit<Principal, 'via'>;

interface Entry {
  readonly identity: Identity;
  /** The principal per way of signing in, made once per cached identity rather than on every request. */
  readonly as: Partial<Record<Principal['via'], Principal>>;
}

/**
 * userId → who they are (admin flag, groups), so an authenticated request costs no SQL. A hit is
 * answered synchronously (no promise on the hot path); only a miss returns a Promise.
 */
export function createPrincipalCache(directory: Directory, size: number, onCache?: (hit: boolean) => void) {
  const cache = new LRUCache<number, Entry>({ max: size });
  /** Bumped by `invalidate`: a read that started before it must not refill the cache with what it read. */
  let generation = 0;

  async function load(userId: number): Promise<Entry | undefined> {
    const startedAt = generation;
    const user = await directory.userById(userId);
    // A disabled user proves nothing, whatever credential still names them (not cached: it stays rare).
    if (!user || user.disabledAt != null) return undefined;
    const identity: Identity = {
      userId: user.id,
      username: user.username,
      isAdmin: user.isAdmin,
      isServiceAccount: user.isServiceAccount,
      groupIds: Object.freeze(await directory.groupIdsOfUser(user.id)),
    };
    const made = { identity, as: {} };
    if (startedAt === generation) cache.set(userId, made);
    return made;
  }

  function entry(userId: number): Entry | undefined | Promise<Entry | undefined> {
    const hit = cache.get(userId);
    onCache?.(hit !== undefined);
    return hit ?? load(userId);
  }

  const asVia = (e: Entry | undefined, via: Principal['via']): Principal | undefined => e && (e.as[via] ??= Object.assign({}, e.identity, { via }));

  return {
    get(userId: number): Identity | undefined | Promise<Identity | undefined> {
      const e = entry(userId);
      return e instanceof Promise ? e.then((found) => found?.identity) : e?.identity;
    },
    /** The user as a principal signed in by `via`; the same object until the cache is invalidated. */
    principal(userId: number, via: Principal['via']): Principal | undefined | Promise<Principal | undefined> {
      const e = entry(userId);
      return e instanceof Promise ? e.then((found) => asVia(found, via)) : asVia(e, via);
    },
    invalidate(): void {
      generation++;
      cache.clear();
    },
  };
}

export type PrincipalCache = ReturnType<typeof createPrincipalCache>;
