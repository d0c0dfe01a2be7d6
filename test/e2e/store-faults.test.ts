import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';
import { eventually, scrape, sum } from '../helpers/prom.js';

/*
 * Issue 39: the policy store fails fast and says so. PostgreSQL frozen (SIGSTOP on its process group:
 * sockets open, nothing answered), a SQLite file on a full filesystem, and creates of one name raced
 * against each other, with the real MLflow behind flowgate. Each test runs on its own PostgreSQL
 * cluster (freezing the suite's shared one would stall every other test file).
 */

const PG_PASSWORD = 'pg-secret-do-not-log-7f3a';
const QUERY_TIMEOUT_MS = 1500;

let mlflow: MlflowServer;
let pgServer: PostgresServer;
beforeAll(async () => {
  [mlflow, pgServer] = await Promise.all([startMlflowServer(), startPostgres()]);
});
afterAll(async () => {
  // Never leave a stopped server behind, whatever a test did.
  try {
    pgServer?.thaw();
  } catch {
    // Already gone.
  }
  await pgServer?.stop();
  await mlflow?.stop();
});

/** The database URL with a password in it (trust authentication ignores it): it must never reach a log. */
async function databaseUrl(): Promise<string> {
  const u = new URL(await pgServer.createDatabase());
  u.password = PG_PASSWORD;
  return u.toString();
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

async function call(base: string, method: string, path: string, auth: string, body?: unknown) {
  const r = await fetch(base + path, {
    method,
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await r.text();
  return { status: r.status, text, json: JSON.parse(text) as Record<string, unknown> };
}

const logLines = (fg: TestFlowgate) =>
  fg.logs
    .join('')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('PostgreSQL frozen (SIGSTOP) and resumed (SIGCONT)', () => {
  let fg: TestFlowgate;
  let url: string;
  const admin = jsonCaller(() => fg.url);

  beforeAll(async () => {
    url = await databaseUrl();
    fg = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_DATABASE_URL: url,
      FLOWGATE_DATABASE_POOL_SIZE: '4',
      FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS: '1000',
      FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      FLOWGATE_DATABASE_CONNECT_TIMEOUT_MS: '1500',
      FLOWGATE_STORE_WATCH_MS: '500',
    });
    await admin.withTokens(['alice', 'bob']);
  });
  afterAll(async () => {
    pgServer.thaw();
    await fg?.close();
    if (fg) removeDir(fg.dir);
  });

  it('answers 503 fast while frozen (readiness within 2 s, requests within the query timeout), and recovers on SIGCONT without a restart', async () => {
    expect((await fetch(`${fg.url}/readyz`)).status).toBe(200);
    // An administrator's call flowgate has seen: its credential is cached, its decision made in memory.
    // The set-up's writes come back on the change feed, each dropping the credential cache, and on a
    // busy machine one may land after the first call: wait until calls a catch-up interval apart all hit it.
    const tokenMisses = async () => sum((await scrape(fg.metricsUrl)).samples, 'flowgate_cache_requests_total', { cache: 'token', result: 'miss' });
    const adminCall = () => call(fg.url, 'GET', '/api/2.0/mlflow/experiments/search?max_results=1', adminAuth());
    await eventually(async () => {
      expect((await adminCall()).status).toBe(200);
      const misses = await tokenMisses();
      for (let i = 0; i < 2; i++) {
        await new Promise((r) => setTimeout(r, 600));
        expect((await adminCall()).status).toBe(200);
      }
      expect(await tokenMisses()).toBe(misses);
    }, 15_000);
    const measured: Record<string, number> = {};

    pgServer.freeze();
    try {
      // The last check may be reused for a second (maxAgeMs); after that a probe waits at most 2 s.
      await new Promise((r) => setTimeout(r, 1100));
      const ready = await timed(() => fetch(`${fg.url}/readyz`).then(async (r) => ({ status: r.status, body: (await r.json()) as unknown })));
      measured.readyz = ready.ms;
      expect(ready.value.status).toBe(503);
      expect(ready.value.body).toEqual({ status: 'unready', store: false, upstream: true, reason: 'store-not-writable' });
      expect(ready.ms).toBeLessThan(2500);

      // alice's token was minted but never used: verifying it needs the store.
      const alice = await timed(() => call(fg.url, 'GET', '/api/2.0/mlflow/experiments/search?max_results=1', admin.basicOf('alice')));
      measured.uncachedToken = alice.ms;
      expect(alice.value.status, alice.value.text).toBe(503);
      expect(alice.value.json).toEqual({ error_code: 'TEMPORARILY_UNAVAILABLE', message: 'The policy store is not available right now; try again shortly' });
      expect(alice.ms).toBeLessThan(QUERY_TIMEOUT_MS + 1000);

      // An administrator's change needs the store: 503 too, not a hang and not a 500.
      const create = await timed(() => call(fg.url, 'POST', '/api/2.0/mlflow/users/create', adminAuth(), { username: 'carol' }));
      measured.adminCreate = create.ms;
      expect(create.value.status, create.value.text).toBe(503);
      expect(create.value.json.error_code).toBe('TEMPORARILY_UNAVAILABLE');
      expect(create.ms).toBeLessThan(QUERY_TIMEOUT_MS + 1000);

      // More requests than the pool has connections: none waits past the deadline for one.
      const burst = await timed(() =>
        Promise.all(Array.from({ length: 12 }, (_, i) => call(fg.url, 'POST', '/api/2.0/mlflow/permissions/groups', adminAuth(), { group_name: `g${i}` }))),
      );
      measured.burstOf12 = burst.ms;
      expect(burst.value.map((r) => r.status)).toEqual(burst.value.map(() => 503));
      expect(burst.ms).toBeLessThan(QUERY_TIMEOUT_MS + 1500);

      // Decisions on cached credentials go on from memory while the store is away.
      const cached = await adminCall();
      expect(cached.status, cached.text).toBe(200);
    } finally {
      pgServer.thaw();
    }

    const back = await timed(() =>
      eventually(async () => {
        const r = await fetch(`${fg.url}/readyz`);
        expect(r.status).toBe(200);
      }, 15_000),
    );
    measured.readyAgainAfterThaw = back.ms;
    // The same process, no restart: alice's first call and the administrator's change now go through.
    expect((await call(fg.url, 'GET', '/api/2.0/mlflow/experiments/search?max_results=1', admin.basicOf('alice'))).status).toBe(200);
    expect((await call(fg.url, 'POST', '/api/2.0/mlflow/users/create', adminAuth(), { username: 'carol' })).status).toBe(201);
    console.log(`store-faults measured (ms): ${JSON.stringify(Object.fromEntries(Object.entries(measured).map(([k, v]) => [k, Math.round(v)])))}`);

    const lines = logLines(fg);
    const storeLines = lines.filter((l) => l.msg === 'policy store unavailable: answered 503');
    // One line per refused request (alice, carol, 12 groups), each with the driver's cause.
    expect(storeLines.length).toBe(14);
    for (const l of storeLines) expect(String(l.cause)).toMatch(/did not answer|Query read timeout|timeout exceeded|Connection terminated/);
    expect(lines.filter((l) => l.msg === 'unexpected error')).toEqual([]);
    const all = fg.logs.join('');
    expect(all).not.toContain(PG_PASSWORD);
    expect(all).not.toMatch(/"stack":"[^"]/);
  }, 120_000);

  it('with the default timeouts (query timeout 6 s) /readyz still answers 503 within 2 s', async () => {
    const defaults = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DATABASE_URL: url });
    try {
      expect((await fetch(`${defaults.url}/readyz`)).status).toBe(200);
      pgServer.freeze();
      try {
        await new Promise((r) => setTimeout(r, 1100));
        const ready = await timed(() => fetch(`${defaults.url}/readyz`).then((r) => r.status));
        expect(ready.value).toBe(503);
        expect(ready.ms).toBeLessThan(2000);
        console.log(`store-faults measured (ms): {"readyzWithDefaults":${Math.round(ready.ms)}}`);
      } finally {
        pgServer.thaw();
      }
      await eventually(async () => expect((await fetch(`${defaults.url}/readyz`)).status).toBe(200), 15_000);
    } finally {
      await defaults.close();
      removeDir(defaults.dir);
    }
  }, 60_000);

  it('the change feed is back after the freeze: a grant another flowgate makes afterwards is in force here', async () => {
    const exp = await call(mlflow.url, 'POST', '/api/2.0/mlflow/experiments/create', '', { name: `faults-${Date.now()}` });
    const experimentId = exp.json.experiment_id as string;
    const get = () => call(fg.url, 'GET', `/api/2.0/mlflow/experiments/get?experiment_id=${experimentId}`, admin.basicOf('bob'));
    expect((await get()).status).toBe(403);
    // Long enough for the feed's own catch-up query to go unanswered and the feed to be given up.
    pgServer.freeze();
    try {
      await new Promise((r) => setTimeout(r, QUERY_TIMEOUT_MS + 1500));
    } finally {
      pgServer.thaw();
    }
    await eventually(async () => expect((await fetch(`${fg.url}/readyz`)).status).toBe(200), 15_000);
    const other = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DATABASE_URL: url });
    try {
      expect((await call(other.url, 'POST', `/api/2.0/mlflow/permissions/users/bob/experiments/${experimentId}`, adminAuth(), { permission: 'READ' })).status).toBe(201);
    } finally {
      await other.close();
      removeDir(other.dir);
    }
    await eventually(async () => expect((await get()).status).toBe(200), 10_000);
  }, 60_000);
});

/** The pids of the listening connections (src/store/postgres-follow.ts names them) on the database. */
async function listenerPids(url: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const r = await client.query<{ pid: number }>("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'flowgate-listener'");
    return r.rows.map((row) => row.pid);
  } finally {
    await client.end();
  }
}

describe('PostgreSQL: one replica\'s listening connection frozen (SIGSTOP on its backend alone)', () => {
  it('a revoke through the other replica is obeyed within about 2 s, and the feed is back afterwards', async () => {
    const url = await databaseUrl();
    // Default statement and query timeouts (5 s and 6 s): a check waiting on the listener itself took that long.
    const env = { FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DATABASE_URL: url, FLOWGATE_STORE_WATCH_MS: '500' };
    const writer = await startTestFlowgate(env);
    let reader: TestFlowgate | undefined;
    let frozen: number | undefined;
    try {
      const before = await eventually(async () => {
        const pids = await listenerPids(url);
        expect(pids).toHaveLength(1);
        return pids;
      }, 10_000);
      reader = await startTestFlowgate(env);
      const fg = reader;
      frozen = await eventually(async () => {
        const pids = (await listenerPids(url)).filter((pid) => !before.includes(pid));
        expect(pids).toHaveLength(1);
        return pids[0]!;
      }, 10_000);

      const admin = jsonCaller(() => writer.url);
      await admin.withTokens(['frank', 'gina']);
      const exp = await call(mlflow.url, 'POST', '/api/2.0/mlflow/experiments/create', '', { name: `listener-${Date.now()}` });
      const experimentId = exp.json.experiment_id as string;
      const grantPath = (user: string) => `/api/2.0/mlflow/permissions/users/${user}/experiments/${experimentId}`;
      const get = (user: string) => call(fg.url, 'GET', `/api/2.0/mlflow/experiments/get?experiment_id=${experimentId}`, admin.basicOf(user));
      await admin.call('POST', grantPath('frank'), { permission: 'READ' });
      await eventually(async () => expect((await get('frank')).status).toBe(200), 10_000);

      process.kill(frozen, 'SIGSTOP');
      const revoked = await timed(async () => {
        await admin.call('DELETE', grantPath('frank'));
        return eventually(async () => expect((await get('frank')).status).toBe(403), 15_000);
      });
      console.log(`store-faults measured (ms): {"revokeWithListenerFrozen":${Math.round(revoked.ms)}}`);
      expect(revoked.ms).toBeLessThan(2500);

      // A new listener took over: a grant made now reaches this replica by notification.
      await admin.call('POST', grantPath('gina'), { permission: 'READ' });
      await eventually(async () => expect((await get('gina')).status).toBe(200), 10_000);
      await eventually(async () => expect((await fetch(`${fg.url}/readyz`)).status).toBe(200), 10_000);
      expect(fg.logs.join('')).not.toContain(PG_PASSWORD);
    } finally {
      if (frozen !== undefined) process.kill(frozen, 'SIGCONT');
      await reader?.close();
      await writer.close();
      if (reader) removeDir(reader.dir);
      removeDir(writer.dir);
    }
  }, 90_000);
});

/** Twenty creates of one thing at once: exactly one 201, and every other a 409 in MLflow's shape. */
function expectOneCreated(answers: readonly { status: number; json: Record<string, unknown>; text: string }[]): void {
  const statuses = answers.map((a) => a.status).sort();
  expect(statuses, answers.map((a) => a.text).join('\n')).toEqual([201, ...Array<number>(answers.length - 1).fill(409)]);
  for (const a of answers.filter((x) => x.status === 409)) expect(a.json.error_code).toBe('RESOURCE_ALREADY_EXISTS');
}

describe.each(['sqlite', 'postgres'] as const)('concurrent creates of one name on %s', (engine) => {
  let fg: TestFlowgate;
  const admin = jsonCaller(() => fg.url);
  let experimentId: string;

  beforeAll(async () => {
    fg = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      // '' drops a URL the suite's PostgreSQL run would set: this block picks its engine itself.
      FLOWGATE_DATABASE_URL: engine === 'postgres' ? await databaseUrl() : '',
    });
    await admin.withTokens(['dora']);
    const exp = await call(mlflow.url, 'POST', '/api/2.0/mlflow/experiments/create', '', { name: `race-${engine}-${Date.now()}` });
    experimentId = exp.json.experiment_id as string;
  });
  afterAll(async () => {
    await fg?.close();
    if (fg) removeDir(fg.dir);
  });

  const twenty = (method: string, path: string, body: unknown) => Promise.all(Array.from({ length: 20 }, () => call(fg.url, method, path, adminAuth(), body)));

  it('users/create: one 201, nineteen 409, one user', async () => {
    expectOneCreated(await twenty('POST', '/api/2.0/mlflow/users/create', { username: 'racer' }));
    const users = (await admin.call('GET', '/api/2.0/mlflow/permissions/users')).users as { username: string }[];
    expect(users.filter((u) => u.username === 'racer')).toHaveLength(1);
  });

  it('groups: one 201, nineteen 409', async () => {
    expectOneCreated(await twenty('POST', '/api/2.0/mlflow/permissions/groups', { group_name: 'racers' }));
  });

  it('a grant: one 201, nineteen 409, the permission the winner set', async () => {
    expectOneCreated(await twenty('POST', `/api/2.0/mlflow/permissions/users/dora/experiments/${experimentId}`, { permission: 'READ' }));
    const grant = await admin.call('GET', `/api/2.0/mlflow/permissions/users/dora/experiments/${experimentId}`);
    expect(grant.permission).toMatchObject({ permission: 'READ' });
    // The policy index holds what the store holds: dora reads the experiment.
    expect((await call(fg.url, 'GET', `/api/2.0/mlflow/experiments/get?experiment_id=${experimentId}`, admin.basicOf('dora'))).status).toBe(200);
  });

  it('no 500 and no stack in the log for the lost races', () => {
    const all = fg.logs.join('');
    expect(all).not.toContain('unexpected error');
    expect(all).not.toMatch(/"stack":"[^"]/);
    expect(all).not.toContain(PG_PASSWORD);
  });
});

/** A small tmpfs of our own (root only): a real full filesystem, not a simulation. */
function mountTmpfs(sizeBytes: number): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeBytes}`, 'tmpfs', dir], { stdio: 'pipe' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}

describe('SQLite on a full filesystem (a real 8 MiB tmpfs)', () => {
  let fg: TestFlowgate;
  let tmpfs: string | undefined;

  beforeAll(async () => {
    // Mounted here, not at import: a run that filters this block out must not leave a mount behind.
    tmpfs = mountTmpfs(8 * 1024 * 1024);
    if (!tmpfs) return;
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DATABASE_URL: '' }, tmpfs);
  });
  afterAll(async () => {
    await fg?.close();
    if (tmpfs) {
      execFileSync('umount', [tmpfs], { stdio: 'pipe' });
      rmSync(tmpfs, { recursive: true, force: true });
    }
  });

  it('turns unready when the disk fills, refuses writes with 503, and is ready again once there is room', async (ctx) => {
    // Mounting needs root (CAP_SYS_ADMIN); test/unit/store-failures.test.ts covers SQLITE_FULL with max_page_count.
    if (!tmpfs) return ctx.skip('cannot mount a tmpfs here (not root)');
    expect((await fetch(`${fg.url}/readyz`)).status).toBe(200);
    const filler = join(tmpfs!, 'filler');
    // Fill every byte left: the write stops at ENOSPC with what fit.
    try {
      writeFileSync(filler, Buffer.alloc(16 * 1024 * 1024));
    } catch (e) {
      expect((e as NodeJS.ErrnoException).code).toBe('ENOSPC');
    }
    try {
      await eventually(async () => {
        const r = await fetch(`${fg.url}/readyz`);
        expect(r.status).toBe(503);
        expect(await r.json()).toEqual({ status: 'unready', store: false, upstream: true, reason: 'store-not-writable' });
      }, 5_000);
      const create = await call(fg.url, 'POST', '/api/2.0/mlflow/users/create', adminAuth(), { username: 'no-room', display_name: 'x'.repeat(200) });
      expect(create.status, create.text).toBe(503);
      expect(create.json.error_code).toBe('TEMPORARILY_UNAVAILABLE');
    } finally {
      rmSync(filler, { force: true });
    }
    await eventually(async () => expect((await fetch(`${fg.url}/readyz`)).status).toBe(200), 5_000);
    expect((await call(fg.url, 'POST', '/api/2.0/mlflow/users/create', adminAuth(), { username: 'room-again' })).status).toBe(201);
    const lines = logLines(fg);
    expect(lines.filter((l) => l.msg === 'policy store unavailable: answered 503').map((l) => String(l.cause))).toEqual([expect.stringMatching(/^SQLITE_FULL/)]);
    expect(lines.filter((l) => l.msg === 'unexpected error')).toEqual([]);
  }, 60_000);
});
