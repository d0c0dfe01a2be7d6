import { existsSync, mkdtempSync } from 'node:fs';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { loadConfig, type Env } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { startFlowgate, type Flowgate } from '../../src/main.js';
import { ADMIN, logCapture, removeDir, startStubUpstream } from '../helpers/flowgate.js';
import { eventually } from '../helpers/prom.js';
import { onPostgres, storeSettings } from '../helpers/test-store.js';

/**
 * A start that fails part-way closes everything it had opened before the failing step: the store
 * (and its change feed), the MLflow connection pool, the listeners. Each case lets flowgate open the
 * store and reach MLflow (reading its version leaves a keep-alive connection in the pool) before a
 * late step fails.
 */

type Upstream = Awaited<ReturnType<typeof startStubUpstream>>;
const dirs: string[] = [];
const taken: NetServer[] = [];
const upstreams: Upstream[] = [];

afterEach(async () => {
  for (const s of taken.splice(0)) await new Promise<void>((resolve) => s.close(() => resolve()));
  for (const u of upstreams.splice(0)) await u.close();
});
afterAll(() => {
  for (const dir of dirs) removeDir(dir);
});

/** A loopback port something else listens on. */
async function occupiedPort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  taken.push(s);
  return (s.address() as AddressInfo).port;
}

/** A loopback port nothing listens on (for now). */
async function freePort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

/** Whether something can listen on the port now. */
async function canListen(port: number): Promise<boolean> {
  const s = createNetServer();
  return new Promise<boolean>((resolve) => {
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** The connections MLflow (a stub) has open. */
const connectionsTo = (upstream: Upstream) => () =>
  new Promise<number>((resolve, reject) => upstream.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

/** The store has no connection open: SQLite removes its WAL file as its last connection closes; PostgreSQL has no session on the database. */
async function storeConnections(env: Record<string, string>): Promise<number> {
  if (!onPostgres()) return existsSync(`${env.FLOWGATE_DB_PATH}-wal`) ? 1 : 0;
  const database = new URL(env.FLOWGATE_DATABASE_URL!).pathname.slice(1);
  const c = new pg.Client({ connectionString: process.env.FLOWGATE_TEST_POSTGRES_URL });
  await c.connect();
  try {
    const r = await c.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [database]);
    return Number(r.rows[0]!.n);
  } finally {
    await c.end();
  }
}

interface Attempt {
  /** flowgate's start: a Flowgate, or why it did not start. */
  readonly started: Promise<Flowgate>;
  readonly logs: string[];
  /** Connections open to the store, and to MLflow. */
  readonly store: () => Promise<number>;
  readonly mlflow: () => Promise<number>;
}

async function attemptStart(env: Env): Promise<Attempt> {
  const upstream = await startStubUpstream();
  upstreams.push(upstream);
  // A long keep-alive (announced to the pool in `Keep-Alive: timeout=60`): a connection the pool
  // was left with stays open for the whole test, so only closing the pool closes it.
  upstream.server.keepAliveTimeout = 60_000;
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-start-'));
  dirs.push(dir);
  const settings = await storeSettings(dir);
  const config = loadConfig({
    FLOWGATE_HOST: '127.0.0.1',
    FLOWGATE_METRICS_HOST: '127.0.0.1',
    FLOWGATE_PORT: '0',
    FLOWGATE_METRICS_PORT: '0',
    ...settings,
    // A store watched often: its change feed must be stopped before the store closes under it.
    FLOWGATE_STORE_WATCH_MS: '20',
    FLOWGATE_ADMIN_USERNAME: ADMIN.username,
    FLOWGATE_ADMIN_TOKEN: ADMIN.token,
    FLOWGATE_UPSTREAM_URL: upstream.url,
    FLOWGATE_LOG_LEVEL: 'info',
    ...env,
  });
  const { logs, sink } = logCapture();
  const started = startFlowgate(config, { logger: createLogger(config.logLevel, sink) });
  // Settled (either way) before the caller looks.
  await started.catch(() => undefined);
  // flowgate had reached MLflow (its version) before any late step.
  expect(upstream.seen.map((r) => r.url)).toContain('/version');
  return { started, logs, store: () => storeConnections(settings), mlflow: connectionsTo(upstream) };
}

async function failedStart(env: Env): Promise<Omit<Attempt, 'started'> & { readonly error: Error }> {
  const attempt = await attemptStart(env);
  const error = await attempt.started.then(
    (fg) => {
      void fg.close();
      throw new Error('flowgate started');
    },
    (e: unknown) => e as Error,
  );
  return { ...attempt, error };
}

describe('a start that fails part-way', () => {
  it('closes the store and the MLflow pool when the public port is taken', async () => {
    const port = await occupiedPort();
    const { error, store, mlflow } = await failedStart({ FLOWGATE_PORT: String(port) });
    expect((error as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
    await eventually(async () => expect(await store()).toBe(0), 1000);
    await eventually(async () => expect(await mlflow()).toBe(0), 1000);
  });

  it('closes the public listener, the store and the MLflow pool when the metrics port is taken', async () => {
    const port = await freePort();
    const metricsPort = await occupiedPort();
    const { error, store, mlflow, logs } = await failedStart({ FLOWGATE_PORT: String(port), FLOWGATE_METRICS_PORT: String(metricsPort) });
    expect((error as NodeJS.ErrnoException).code).toBe('EADDRINUSE');
    // The closes ran before the start's promise settled: the public port is free at once.
    expect(await canListen(port)).toBe(true);
    await eventually(async () => expect(await store()).toBe(0), 1000);
    await eventually(async () => expect(await mlflow()).toBe(0), 1000);
    expect(logs.join('')).not.toContain('flowgate listening');
  });

  it('closes the store and the MLflow pool when the inference config cannot be read', async () => {
    const { error, store, mlflow } = await failedStart({ FLOWGATE_INFERENCE_CONFIG_FILE: join(tmpdir(), 'flowgate-no-such-inference-config.yaml') });
    expect(error.message).toMatch(/inference|no such file|ENOENT/i);
    await eventually(async () => expect(await store()).toBe(0), 1000);
    await eventually(async () => expect(await mlflow()).toBe(0), 1000);
  });

  it('and close() after a start unwinds the same modules', async () => {
    const port = await freePort();
    const attempt = await attemptStart({ FLOWGATE_PORT: String(port) });
    const fg = await attempt.started;
    expect(await attempt.store()).toBeGreaterThan(0);
    expect(await canListen(port)).toBe(false);
    const metricsPort = Number(new URL(fg.metricsUrl).port);
    await Promise.all([fg.close(), fg.close()]);
    expect(await canListen(port)).toBe(true);
    expect(await canListen(metricsPort)).toBe(true);
    await eventually(async () => expect(await attempt.store()).toBe(0), 1000);
    await eventually(async () => expect(await attempt.mlflow()).toBe(0), 1000);
  });
});
