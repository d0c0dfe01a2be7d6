import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { Sql, SqlValue } from './sql.js';

export interface PostgresOptions {
  /** `postgres://user:password@host:port/database?sslmode=…` */
  readonly url: string;
  /** Connections per flowgate: a bounded pool, so N replicas hold at most N × this many. */
  readonly poolSize: number;
  /** Server-side limit for any one statement. */
  readonly statementTimeoutMs: number;
  /** How long to wait for a connection (new, or a free one from a busy pool). */
  readonly connectTimeoutMs: number;
  /** PEM of the CA that signed the server's certificate: turns on verified TLS. */
  readonly caCertificate?: string | undefined;
  readonly onPoolError?: (err: Error) => void;
}

const INT8 = 20;

/** ids, counts and epoch milliseconds are BIGINT, which pg hands back as strings; all fit in a double. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export function clientConfig(opts: PostgresOptions): pg.ClientConfig {
  return {
    connectionString: opts.url,
    statement_timeout: opts.statementTimeoutMs,
    idle_in_transaction_session_timeout: Math.max(opts.statementTimeoutMs * 2, 10_000),
    connectionTimeoutMillis: opts.connectTimeoutMs,
    application_name: 'flowgate',
    types,
    ...(opts.caCertificate !== undefined ? { ssl: { ca: opts.caCertificate, rejectUnauthorized: true } } : {}),
  };
}

/** `?` placeholders to `$1…`, outside quoted text; each statement text is rewritten once. */
function numberedPlaceholders(): (text: string) => string {
  const cache = new Map<string, string>();
  return (text) => {
    let out = cache.get(text);
    if (out !== undefined) return out;
    let n = 0;
    let quote: string | undefined;
    out = '';
    for (const ch of text) {
      if (quote !== undefined) {
        if (ch === quote) quote = undefined;
        out += ch;
      } else if (ch === "'" || ch === '"') {
        quote = ch;
        out += ch;
      } else out += ch === '?' ? `$${++n}` : ch;
    }
    cache.set(text, out);
    return out;
  };
}

/**
 * The shared store on PostgreSQL: a bounded pool, a statement timeout on every connection, and
 * transactions that follow their caller across awaits (the transaction's connection is found through
 * async context, so repositories need not pass it around).
 */
export function postgresSql(opts: PostgresOptions): Sql & { readonly pool: pg.Pool } {
  const pool = new pg.Pool({ ...clientConfig(opts), max: opts.poolSize, idleTimeoutMillis: 30_000 });
  // An idle connection the server dropped (PostgreSQL restarted) must not end the process: the pool
  // replaces it, and readiness reports the outage meanwhile.
  pool.on('error', (err) => opts.onPoolError?.(err));
  const inTransaction = new AsyncLocalStorage<pg.PoolClient>();
  const numbered = numberedPlaceholders();

  const query = <T>(text: string, params: readonly SqlValue[] | undefined) =>
    (inTransaction.getStore() ?? pool).query<T & pg.QueryResultRow>(numbered(text), params as unknown[] | undefined);

  return {
    dialect: 'postgres',
    pool,
    async get<T>(text: string, params?: readonly SqlValue[]): Promise<T | undefined> {
      return (await query<T>(text, params)).rows[0];
    },
    async all<T>(text: string, params?: readonly SqlValue[]): Promise<T[]> {
      return (await query<T>(text, params)).rows;
    },
    async run(text: string, params?: readonly SqlValue[]): Promise<number> {
      return (await query(text, params)).rowCount ?? 0;
    },
    async transaction<T>(fn: () => Promise<T>): Promise<T> {
      if (inTransaction.getStore() !== undefined) return fn();
      const client = await pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        try {
          const result = await inTransaction.run(client, fn);
          await client.query('COMMIT');
          return result;
        } catch (e) {
          await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
          throw e;
        }
      } finally {
        client.release(broken);
      }
    },
    async lock(name: string): Promise<void> {
      const client = inTransaction.getStore();
      if (client === undefined) throw new Error('lock() outside a transaction');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [name]);
    },
    async ping(): Promise<void> {
      const row = (await pool.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby')).rows[0];
      if (row?.standby) throw new Error('PostgreSQL is a read-only standby');
    },
    async close(): Promise<void> {
      await pool.end();
    },
  };
}
