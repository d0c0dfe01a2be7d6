import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openSqliteStore } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openPostgresStore } from '../../src/store/postgres-store.js';
import type { Sql } from '../../src/store/sql.js';
import { openStore } from '../../src/store/store.js';

/**
 * Where a test flowgate keeps its store. The suite runs twice in CI: on the embedded SQLite file, and
 * with FLOWGATE_TEST_STORE=postgres on the PostgreSQL server the global setup started, where every
 * test store directory gets a database of its own (the same one again on a restart).
 */
export async function storeSettings(dir: string): Promise<Record<string, string>> {
  const settings: Record<string, string> = { FLOWGATE_DB_PATH: join(dir, 'flowgate.db') };
  const server = process.env.FLOWGATE_TEST_POSTGRES_URL;
  if (process.env.FLOWGATE_TEST_STORE !== 'postgres') return settings;
  if (!server) throw new Error('FLOWGATE_TEST_STORE=postgres needs the global setup test/setup/postgres.ts (vitest.config.ts)');
  const name = `fg_${createHash('sha256').update(dir).digest('hex').slice(0, 24)}`;
  const c = new pg.Client({ connectionString: server });
  await c.connect();
  try {
    const exists = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount === 0) await c.query(`CREATE DATABASE ${name}`);
  } finally {
    await c.end();
  }
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { ...settings, FLOWGATE_DATABASE_URL: url.toString() };
}

export const onPostgres = (): boolean => process.env.FLOWGATE_TEST_STORE === 'postgres';

/** A fresh store for one test: SQLite in memory, or (FLOWGATE_TEST_STORE=postgres) a new database on the suite's server. */
export async function freshStore(): Promise<{ sql: Sql; close: () => Promise<void> }> {
  if (!onPostgres()) {
    const sql = openSqliteStore(':memory:');
    return { sql, close: () => sql.close() };
  }
  const server = process.env.FLOWGATE_TEST_POSTGRES_URL!;
  const name = `fg_fresh_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`).finally(() => admin.end());
  const url = new URL(server);
  url.pathname = `/${name}`;
  const opened = await openStore({
    dbPath: 'unused',
    databaseUrl: url.toString(),
    watchMs: 0,
    postgres: { poolSize: 2, statementTimeoutMs: 5000, connectTimeoutMs: 5000 },
  });
  return { sql: opened.sql, close: () => opened.close() };
}

/**
 * A new store (a SQLite file, or a new database on the suite's PostgreSQL server) migrated only up to
 * `version`, as an older flowgate left it; `upgrade` closes it and opens it again as this flowgate
 * does, running every later migration. `close` closes whichever is open (and removes the file).
 */
export async function storeAt(version: number): Promise<{ sql: Sql; upgrade: () => Promise<Sql>; close: () => Promise<void> }> {
  let open: (migrations: typeof MIGRATIONS) => Promise<{ sql: Sql; close: () => Promise<void> }>;
  let cleanUp = async (): Promise<void> => undefined;
  if (!onPostgres()) {
    const dir = mkdtempSync(join(tmpdir(), `fg-at-${version}-`));
    cleanUp = async () => rmSync(dir, { recursive: true, force: true });
    open = async (migrations) => {
      const sql = openSqliteStore(join(dir, 'p.db'), migrations);
      return { sql, close: () => sql.close() };
    };
  } else {
    const server = process.env.FLOWGATE_TEST_POSTGRES_URL!;
    const name = `fg_at_${randomBytes(6).toString('hex')}`;
    const admin = new pg.Client({ connectionString: server });
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`).finally(() => admin.end());
    const url = new URL(server);
    url.pathname = `/${name}`;
    open = async (migrations) => {
      const store = await openPostgresStore({ dbPath: 'unused', watchMs: 0, postgres: { poolSize: 2, statementTimeoutMs: 5000, connectTimeoutMs: 5000 } }, url.toString(), migrations);
      return { sql: store.sql, close: () => store.close() };
    };
  }
  let current = await open(MIGRATIONS.filter((m) => m.version <= version));
  return {
    sql: current.sql,
    upgrade: async () => {
      await current.close();
      current = await open(MIGRATIONS);
      return current.sql;
    },
    close: async () => {
      await current.close();
      await cleanUp();
    },
  };
}
