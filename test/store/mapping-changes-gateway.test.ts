import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StoreChangeListener } from '../../src/store/changes.js';
import type { MappingChange } from '../../src/store/mapping-changes.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import type { Store } from '../../src/store/store.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

/** Migration 13 on PostgreSQL: the mapping change log takes `gateway`, keeps its rows, and announces them. */
let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const OLD_CACHES = ['experiment_names', 'model', 'trace', 'dataset', 'review_queue'] as const;
const options = { dbPath: 'unused', watchMs: 200, postgres: { poolSize: 2, statementTimeoutMs: 2000, connectTimeoutMs: 2000 } };
const openAt = (url: string, version = MIGRATIONS.at(-1)!.version): Promise<Store> =>
  openPostgresStore(options, url, MIGRATIONS.filter((m) => m.version <= version));

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('migration 13 on PostgreSQL', () => {
  it('keeps every logged row, goes on numbering, takes gateway and every old value, and refuses an unknown one', async () => {
    const url = await server.createDatabase();
    const old = await openAt(url, 12);
    try {
      for (const cache of OLD_CACHES) await old.sql.run('INSERT INTO mapping_changes (cache, key) VALUES (?, ?)', [cache, `k-${cache}`]);
      await expect(old.sql.run("INSERT INTO mapping_changes (cache, key) VALUES ('gateway', 'e-1')")).rejects.toThrow(/check constraint/);
    } finally {
      await old.close();
    }
    const before = [...OLD_CACHES.entries()].map(([i, cache]) => ({ seq: i + 1, cache, key: `k-${cache}` }));

    const store = await openAt(url);
    try {
      expect(await store.sql.get('SELECT version FROM flowgate_schema WHERE id = 1')).toEqual({ version: MIGRATIONS.at(-1)!.version });
      // Rows and their seqs kept (the refused insert may have spent a seq: identities are not given back).
      expect(await store.sql.all('SELECT seq, cache, key FROM mapping_changes ORDER BY seq')).toEqual(before);
      const seq = await store.sql.get<{ seq: number }>("INSERT INTO mapping_changes (cache, key) VALUES ('gateway', 'e-1') RETURNING seq");
      expect(seq!.seq).toBeGreaterThan(before.length);
      for (const cache of OLD_CACHES) await store.sql.run('INSERT INTO mapping_changes (cache, key) VALUES (?, ?)', [cache, 'x']);
      await expect(store.sql.run("INSERT INTO mapping_changes (cache, key) VALUES ('notebook', 'x')")).rejects.toThrow(/mapping_changes_cache_check/);
    } finally {
      await store.close();
    }
  });

  it("announces a gateway change to every replica's listener", async () => {
    const url = await server.createDatabase();
    const [writer, reader] = [await openAt(url), await openAt(url)];
    const seen: Array<readonly MappingChange[] | 'all'> = [];
    const listener: StoreChangeListener = {
      grants: () => undefined,
      principals: () => undefined,
      patterns: () => undefined,
      sessionsEnded: () => undefined,
      mappings: (m) => seen.push(m),
    };
    const following = reader.follow(listener);
    try {
      // Connecting counts as a gap: everything is forgotten once.
      await until(() => following.live() && seen.includes('all'));
      seen.length = 0;
      await writer.sql.run("INSERT INTO mapping_changes (cache, key) VALUES ('gateway', 'd-42')");
      await until(() => seen.length === 1);
      expect(seen).toEqual([[{ cache: 'gateway', key: 'd-42' }]]);
    } finally {
      await following.stop();
      await Promise.all([writer.close(), reader.close()]);
    }
  });
});
