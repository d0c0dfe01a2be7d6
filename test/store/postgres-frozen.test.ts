import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StoreUnavailableError } from '../../src/store/store-errors.js';
import { openStore, type Store } from '../../src/store/store.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { eventually } from '../helpers/prom.js';

/*
 * The PostgreSQL engine against a frozen server (SIGSTOP on the postmaster and its backends): every
 * statement, transaction and wait for a connection gives up within the query timeout, the connections
 * it gave up on are closed, and the same store works again once the server resumes.
 */
const QUERY_TIMEOUT_MS = 800;

let server: PostgresServer;
let store: Store;
beforeAll(async () => {
  server = await startPostgres();
  store = await openStore({
    dbPath: 'unused',
    databaseUrl: await server.createDatabase(),
    watchMs: 0,
    postgres: { poolSize: 2, statementTimeoutMs: 500, connectTimeoutMs: 800, queryTimeoutMs: QUERY_TIMEOUT_MS },
  });
});
afterAll(async () => {
  server?.thaw();
  await store?.close();
  await server?.stop();
});

async function elapsed(work: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = performance.now();
  const error = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { ms: performance.now() - started, error };
}

const insertGroup = (name: string) => store.sql.run('INSERT INTO groups (name, created_at) VALUES (?, ?)', [name, 1]);
const groupCount = async () => (await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM groups'))!.n;

describe('a frozen PostgreSQL', () => {
  it('fails statements, transactions and waits for a connection within the query timeout, and recovers on SIGCONT', async () => {
    expect(await groupCount()).toBe(0);
    let midway!: () => void;
    const begun = new Promise<void>((r) => (midway = r));
    let resume!: () => void;
    const frozen = new Promise<void>((r) => (resume = r));
    // A transaction that began before the freeze, its next statement after.
    const openTx = elapsed(
      store.sql.transaction(async () => {
        await insertGroup('before-freeze');
        midway();
        await frozen;
        await insertGroup('after-freeze');
      }),
    );
    await begun;
    server.freeze();
    try {
      resume();
      // Two statements hold both pooled connections; a third waits for one; a new transaction too.
      const [tx, a, b, c, fresh, ready] = await Promise.all([
        openTx,
        elapsed(store.sql.get('SELECT 1')),
        elapsed(store.sql.get('SELECT 2')),
        elapsed(store.sql.get('SELECT 3')),
        elapsed(store.sql.transaction(() => insertGroup('during'))),
        store.ready(),
      ]);
      for (const [what, r] of Object.entries({ tx, a, b, c, fresh })) {
        expect(r.error, what).toBeInstanceOf(StoreUnavailableError);
        // Within one query timeout: no ROLLBACK sent behind the unanswered statement, no second wait.
        expect(r.ms, what).toBeLessThan(QUERY_TIMEOUT_MS + 600);
      }
      expect(ready).toBe(false);
    } finally {
      server.thaw();
    }
    // The same store, no reopening: fresh connections answer, and the transaction cut off midway left nothing.
    await eventually(async () => expect(await store.ready()).toBe(true), 10_000);
    await eventually(async () => expect(await groupCount()).toBe(0), 5_000);
    await store.sql.transaction(() => insertGroup('after-thaw'));
    expect(await groupCount()).toBe(1);
  }, 30_000);
});
