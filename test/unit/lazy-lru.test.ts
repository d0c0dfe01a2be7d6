import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { LazyLru } from '../../src/lazy-lru.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => (gc(), gc(), process.memoryUsage().heapUsed);

describe('LazyLru', () => {
  it('holds no slots until its first write', () => {
    const before = heapUsed();
    const caches = Array.from({ length: 50 }, () => new LazyLru<string, number>({ max: 100_000, ttl: 60_000 }));
    // Built eagerly, 50 caches of 100k slots with a TTL are ~160 MB of arrays.
    expect(heapUsed() - before).toBeLessThan(5e6);
    expect(caches.every((c) => c.size === 0 && c.get('a') === undefined && !c.delete('a'))).toBe(true);
    caches[0]!.set('a', 1);
    expect(heapUsed() - before).toBeGreaterThan(1e6);
  });

  it('is an lru-cache once written: bounded, least recently used out first, expiring', async () => {
    const cache = new LazyLru<string, number>({ max: 2, ttl: 30 });
    cache.set('a', 1);
    cache.set('b', 2);
    expect(cache.get('a')).toBe(1);
    cache.set('c', 3);
    expect([...cache.entries()].map(([k]) => k).sort()).toEqual(['a', 'c']);
    expect(cache.delete('a')).toBe(true);
    expect(cache.size).toBe(1);
    await new Promise((r) => setTimeout(r, 60));
    expect(cache.get('c')).toBeUndefined();
    cache.set('d', 4);
    cache.clear();
    expect(cache.size).toBe(0);
  });
});
