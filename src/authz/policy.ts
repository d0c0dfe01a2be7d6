import { LRUCache } from 'lru-cache';
import type { GrantFacts } from './decide.js';
import type { GrantsRepo } from './grants-repo.js';
import type { ResourceRef } from './types.js';

/**
 * Reads the grant facts of (user, resource) pairs through a bounded cache. Any policy change clears
 * the whole cache: changes are rare, and partial invalidation across group memberships is where
 * stale-permission bugs hide.
 */
export function createPolicyReader(grants: GrantsRepo, cacheSize: number, onCache?: (hit: boolean) => void) {
  const cache = new LRUCache<string, GrantFacts>({ max: cacheSize });
  return {
    factsFor(userId: number, ref: ResourceRef): GrantFacts {
      const key = `${userId}\u0000${ref.kind}\u0000${ref.id}`;
      const hit = cache.get(key);
      onCache?.(hit !== undefined);
      if (hit) return hit;
      const facts: GrantFacts = grants.factsOfUser(userId, ref.kind, ref.id);
      cache.set(key, facts);
      return facts;
    },
    invalidate(): void {
      cache.clear();
    },
  };
}

export type PolicyReader = ReturnType<typeof createPolicyReader>;
