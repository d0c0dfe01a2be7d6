import pg from 'pg';
import { parse as parseConnectionString, toClientConfig } from 'pg-connection-string';
import { transientStorage } from './transient-storage.js';
import type { Sql, SqlValue } from './sql.js';
import { rethrowStoreError, StoreUnavailableError, storeError } from './store-errors.js';

export interface PostgresOptions {
  /** `postgres://user:password@host:port/database?sslmode=…` */
  readonly url: string;
  /** Connections per flowgate: a bounded pool, so N replicas hold at most N × this many. */
  readonly poolSize: number;
  /** Server-side limit for any one statement. */
  readonly statementTimeoutMs: number;
  /** How long to wait for a connection (new, or a free one from a busy pool). */
  readonly connectTimeoutMs: number;
  /**
   * Client-side limit for one statement, the wait for its connection included: a server that does
   * not answer at all (frozen, a black-holed network) cannot cancel anything itself. Longer than
   * the statement timeout, so a merely slow statement is cancelled by the server and its connection kept.
   */
  readonly queryTimeoutMs: number;
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

/** The URL's own TLS settings, which node-postgres would apply over (and so instead of) the configured CA. */
const URL_TLS_PARAMS = new Set(['ssl', 'sslmode', 'sslrootcert', 'sslcert', 'sslkey', 'uselibpqcompat']);

/**
 * The connection string without its TLS parameters. Cut from the text, not rebuilt by `URL`, so the rest
 * (user, password, host list, options) reaches the parser exactly as written, and no `sslrootcert` file is read.
 */
function withoutTlsParams(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const kept = url
    .slice(q + 1)
    .split('&')
    .filter((pair) => !URL_TLS_PARAMS.has(paramName(pair).toLowerCase()));
  return kept.length ? `${url.slice(0, q)}?${kept.join('&')}` : url.slice(0, q);
}

function paramName(pair: string): string {
  const raw = pair.split('=', 1)[0]!.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export function clientConfig(opts: PostgresOptions): pg.ClientConfig {
  const base: pg.ClientConfig = {
    statement_timeout: opts.statementTimeoutMs,
    idle_in_transaction_session_timeout: Math.max(opts.statementTimeoutMs * 2, 10_000),
    connectionTimeoutMillis: opts.connectTimeoutMs,
    application_name: 'flowgate',
    types,
  };
  if (opts.caCertificate === undefined) return { connectionString: opts.url, ...base };
  // node-postgres merges a connectionString's settings over the config given with it, its `sslmode` included:
  // with a CA the URL is parsed here instead, its TLS parameters dropped, and the verified `ssl` set last.
  const { ssl: _ignored, ...fromUrl } = toClientConfig(parseConnectionString(withoutTlsParams(opts.url)));
  return { ...base, ...fromUrl, ssl: { ca: opts.caCertificate, rejectUnauthorized: true } };
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

/** node-postgres reads `query_timeout` per query (its types do not list it). */
export type TimedQuery = pg.QueryConfig<unknown[]> & { readonly query_timeout: number };

/** `work`, or a `StoreUnavailableError` once `ms` pass; `late` gets what `work` yields after that. */
function withDeadline<T>(work: Promise<T>, ms: number, what: string, late?: (value: T) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let expired = false;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      expired = true;
      reject(new StoreUnavailableError(`PostgreSQL did not answer ${what} within ${ms} ms`, true));
    }, ms);
  });
  work.then(
    (value) => {
      if (expired) late?.(value);
    },
    () => undefined,
  );
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/**
 * The shared store on PostgreSQL: a bounded pool, a statement timeout on every connection, a
 * client-side deadline on every statement, and transactions that follow their caller across awaits
 * (the transaction's connection is found through async context, so repositories need not pass it
 * around). Failures come out as `storeError` makes them: 503 for "not now", 409 for a lost race.
 */
export function postgresSql(opts: PostgresOptions): Sql & { readonly pool: pg.Pool } {
  const pool = new pg.Pool({ ...clientConfig(opts), max: opts.poolSize, idleTimeoutMillis: 30_000 });
  // An idle connection the server dropped (PostgreSQL restarted) must not end the process: the pool
  // replaces it, and readiness reports the outage meanwhile.
  pool.on('error', (err) => opts.onPoolError?.(err));
  const inTransaction = transientStorage<pg.PoolClient>();
  const numbered = numberedPlaceholders();
  const timeoutMs = opts.queryTimeoutMs;

  /**
   * node-postgres's own `query_timeout` closes a connection whose statement got no answer (the pool
   * drops it); the deadline around it also bounds the wait for a connection from a busy pool.
   */
  const query = <T>(text: string, params: readonly SqlValue[] | undefined) => {
    const config: TimedQuery = { text: numbered(text), values: params as unknown[] | undefined, query_timeout: timeoutMs };
    const tx = inTransaction.getStore();
    if (tx !== undefined) return tx.query<T & pg.QueryResultRow>(config).catch(rethrowStoreError);
    return withDeadline(pool.query<T & pg.QueryResultRow>(config), timeoutMs, 'a statement').catch(rethrowStoreError);
  };
  const onClient = (client: pg.PoolClient, text: string) => {
    const config: TimedQuery = { text, query_timeout: timeoutMs };
    return client.query(config);
  };

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
      // A connection handed out after the deadline goes straight back, closed.
      const client = await withDeadline(pool.connect(), timeoutMs, 'with a connection', (late) => late.release(true)).catch(rethrowStoreError);
      let broken: Error | undefined;
      try {
        await onClient(client, 'BEGIN');
        try {
          const result = await inTransaction.run(client, fn);
          await onClient(client, 'COMMIT');
          return result;
        } catch (e) {
          const failure = storeError(e);
          // A connection given up mid-statement is closed: the server rolls back when it notices,
          // and a ROLLBACK sent now would only wait behind the unanswered statement.
          if (failure instanceof StoreUnavailableError && failure.connectionLost) broken = failure;
          else await onClient(client, 'ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
          throw failure;
        }
      } catch (e) {
        const failure = storeError(e);
        if (failure instanceof StoreUnavailableError && failure.connectionLost) broken ??= failure;
        throw failure;
      } finally {
        client.release(broken);
      }
    },
    async lock(name: string): Promise<void> {
      const client = inTransaction.getStore();
      if (client === undefined) throw new Error('lock() outside a transaction');
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [name]).catch(rethrowStoreError);
    },
    async ping(): Promise<void> {
      const row = (await query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby', undefined)).rows[0];
      if (row?.standby) throw new StoreUnavailableError('PostgreSQL is a read-only standby');
    },
    async close(): Promise<void> {
      await pool.end();
    },
  };
}
