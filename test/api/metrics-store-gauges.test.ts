import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { STORE_GAUGES_MAX_AGE_MS, registerStoreGauges } from '../../src/metrics/store-gauges.js';
import { openSqliteStore } from '../../src/store/database.js';
import type { Sql } from '../../src/store/sql.js';

/** The real SQLite store, with every statement it is asked counted (and, on demand, failing). */
function countedStore() {
  const sql = openSqliteStore(':memory:');
  const asked: string[] = [];
  let failing = false;
  const wrapped: Sql = {
    dialect: sql.dialect,
    get: async (text, params) => {
      asked.push(text);
      if (failing) throw new Error('store closed');
      return sql.get(text, params);
    },
    all: (text, params) => sql.all(text, params),
    run: (text, params) => sql.run(text, params),
    transaction: (fn) => sql.transaction(fn),
    lock: (name) => sql.lock(name),
    ping: () => sql.ping(),
    close: () => sql.close(),
  };
  return {
    sql,
    wrapped,
    asked,
    counts: () => asked.filter((t) => /count\(\*\)/i.test(t)).length,
    fail: (on: boolean) => {
      failing = on;
    },
  };
}

const ROUND = 4; // users, groups, grants, active tokens

const gauge = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)![1]);

let store: ReturnType<typeof countedStore> | undefined;
afterEach(async () => {
  await store?.sql.close();
  store = undefined;
});

async function addUser(sql: Sql, name: string) {
  const t = Date.now();
  await sql.run('INSERT INTO users (username, display_name, created_at) VALUES (?, ?, ?)', [name, name, t]);
}

describe('store gauges: counted at most once per max age, however many scrape', () => {
  it('N back-to-back scrapes cost one round of store queries within the max age, and a new round after it', async () => {
    store = countedStore();
    let clock = 1_000_000;
    const registry = new Registry();
    registerStoreGauges(registry, store.wrapped, () => clock);

    const first = await registry.metrics();
    expect(store.counts()).toBe(ROUND);
    for (let i = 0; i < 20; i++) {
      clock += 500; // 10 s of scrapes every half second
      await registry.metrics();
    }
    expect(store.counts()).toBe(ROUND);
    // Scrapes arriving together share one count.
    clock += STORE_GAUGES_MAX_AGE_MS;
    await Promise.all(Array.from({ length: 10 }, () => registry.metrics()));
    expect(store.counts()).toBe(2 * ROUND);
    expect(gauge(first, 'flowgate_store_users')).toBe(gauge(await registry.metrics(), 'flowgate_store_users'));
    expect(store.counts()).toBe(2 * ROUND);
  });

  it('reports the counts, at most the max age old', async () => {
    store = countedStore();
    let clock = 1_000_000;
    const registry = new Registry();
    registerStoreGauges(registry, store.wrapped, () => clock);
    const before = gauge(await registry.metrics(), 'flowgate_store_users');
    await addUser(store.sql, 'carol');
    clock += STORE_GAUGES_MAX_AGE_MS - 1;
    expect(gauge(await registry.metrics(), 'flowgate_store_users')).toBe(before);
    clock += 1;
    expect(gauge(await registry.metrics(), 'flowgate_store_users')).toBe(before + 1);
  });

  it('a store that fails keeps the last values, and is not asked again before the max age', async () => {
    store = countedStore();
    let clock = 1_000_000;
    const registry = new Registry();
    registerStoreGauges(registry, store.wrapped, () => clock);
    await addUser(store.sql, 'dave');
    const before = gauge(await registry.metrics(), 'flowgate_store_users');
    expect(before).toBeGreaterThan(0);
    store.fail(true);
    clock += STORE_GAUGES_MAX_AGE_MS;
    for (let i = 0; i < 5; i++) expect(gauge(await registry.metrics(), 'flowgate_store_users')).toBe(before);
    expect(store.counts()).toBe(2 * ROUND);
    store.fail(false);
    clock += STORE_GAUGES_MAX_AGE_MS;
    expect(gauge(await registry.metrics(), 'flowgate_store_users')).toBe(before);
    expect(store.counts()).toBe(3 * ROUND);
  });
});
