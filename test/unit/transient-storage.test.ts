import { AsyncLocalStorage } from 'node:async_hooks';
import { describe, expect, it } from 'vitest';
import { transientStorage } from '../../src/store/transient-storage.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Node's own flag on a storage (no public API tells whether a storage has switched its promise tracking on). */
const isEnabled = (storage: object) => (storage as { enabled?: boolean }).enabled;

describe('transientStorage', () => {
  it('gives each run its own value, also while runs overlap, and nothing outside them', async () => {
    const storage = transientStorage<string>();
    expect(storage.getStore()).toBeUndefined();
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((r) => (releaseFirst = r));
    const seen: string[] = [];
    const first = storage.run('a', async () => {
      await firstHeld;
      await tick();
      seen.push(`first:${storage.getStore()}`);
    });
    const second = storage.run('b', async () => {
      await tick();
      seen.push(`second:${storage.getStore()}`);
      releaseFirst();
      await tick();
      await tick();
      seen.push(`second-after:${storage.getStore()}`);
    });
    await Promise.all([first, second]);
    expect(seen.sort()).toEqual(['first:a', 'second-after:b', 'second:b']);
    expect(storage.getStore()).toBeUndefined();
  });

  it('a run that ends while another is under way leaves the other its value', async () => {
    const storage = transientStorage<string>();
    let inner: string | undefined;
    let finishLong!: () => void;
    const long = storage.run('long', async () => {
      await new Promise<void>((r) => (finishLong = r));
      inner = storage.getStore();
    });
    await storage.run('short', async () => tick());
    finishLong();
    await long;
    expect(inner).toBe('long');
  });

  it('switches Node’s context tracking off once no run is under way', async () => {
    // Node 20 tracks every promise of the process while any AsyncLocalStorage is enabled.
    const storage = transientStorage<string>();
    let during: boolean | undefined;
    const probe = AsyncLocalStorage.prototype as unknown as { _enable?: () => void };
    const original = probe._enable;
    const enabled: object[] = [];
    probe._enable = function (this: object) {
      enabled.push(this);
      return original?.call(this);
    };
    try {
      await storage.run('x', async () => {
        during = enabled.some((s) => isEnabled(s));
        await tick();
      });
    } finally {
      probe._enable = original;
    }
    expect(during).toBe(true);
    expect(enabled.length).toBe(1);
    expect(isEnabled(enabled[0]!)).toBe(false);
    // A failing run ends the same way.
    await expect(storage.run('y', async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    expect(isEnabled(enabled[0]!)).toBe(false);
    expect(storage.getStore()).toBeUndefined();
  });
});
