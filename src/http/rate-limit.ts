import { LRUCache } from 'lru-cache';

export interface RateLimitOptions {
  /** Tokens added per second (the sustained rate). */
  readonly perSecond: number;
  /** The bucket's size (the burst allowed after a quiet spell). */
  readonly burst: number;
  /** Clients tracked at once; the least recently seen is forgotten (and starts full again). */
  readonly maxClients?: number;
  readonly now?: () => number;
}

interface Bucket {
  tokens: number;
  at: number;
}

/**
 * A token bucket per client: `take` answers 0 when the request may go ahead, else the seconds to
 * wait before the next token (for `Retry-After`). Bounded, so a spray of addresses costs memory
 * only up to `maxClients`.
 */
export function createRateLimiter(o: RateLimitOptions) {
  const now = o.now ?? Date.now;
  const buckets = new LRUCache<string, Bucket>({ max: o.maxClients ?? 10_000 });
  return {
    take(client: string): number {
      const t = now();
      const b = buckets.get(client) ?? { tokens: o.burst, at: t };
      b.tokens = Math.min(o.burst, b.tokens + ((t - b.at) / 1000) * o.perSecond);
      b.at = t;
      buckets.set(client, b);
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((1 - b.tokens) / o.perSecond));
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
