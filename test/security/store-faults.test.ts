import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

/*
 * Issue 39 from the attacker's side: an outage of the policy store (PostgreSQL frozen with SIGSTOP)
 * must not open the gate, and its 503s must tell nothing of the store (no stack, no URL, no password,
 * no driver text); lost create races must not echo the database's words; TRACE is never echoed.
 * Real MLflow behind flowgate; a PostgreSQL cluster of this file's own.
 */
const PG_PASSWORD = 'pg-attack-secret-91c2';
const ALICE_TOKEN_GUESS = 'guessed-token-0123456789abcdef0123456789';

let mlflow: MlflowServer;
let pgServer: PostgresServer;
let fg: TestFlowgate;
let pgUrl: string;
const admin = jsonCaller(() => fg.url);
let aliceExperiment: string;

async function send(method: string, path: string, authorization?: string, body?: unknown) {
  return new Promise<{ status: number; headers: Record<string, unknown>; text: string }>((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(
      fg.url + path,
      { method, headers: { ...(authorization ? { Authorization: authorization } : {}), ...(payload ? { 'Content-Type': 'application/json' } : {}) } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error('no answer in 30 s')));
    req.on('error', reject);
    req.end(payload);
  });
}

/** A 503 in MLflow's shape and nothing else: no stack, no store address or password, no driver or SQL text. */
function tellsNothing(answer: { status: number; text: string }): void {
  expect(answer.status, answer.text).toBe(503);
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  expect(Object.keys(body).sort()).toEqual(['error_code', 'message']);
  expect(body.error_code).toBe('TEMPORARILY_UNAVAILABLE');
  for (const leak of [PG_PASSWORD, 'postgres', String(pgServer.port), '127.0.0.1', 'Query read timeout', 'timeout exceeded', 'SELECT', ' at ', '.ts:', '.js:'])
    expect(answer.text, leak).not.toContain(leak);
}

beforeAll(async () => {
  [mlflow, pgServer] = await Promise.all([startMlflowServer(), startPostgres()]);
  const u = new URL(await pgServer.createDatabase());
  u.password = PG_PASSWORD;
  pgUrl = u.toString();
  fg = await startTestFlowgate({
    FLOWGATE_UPSTREAM_URL: mlflow.url,
    FLOWGATE_DATABASE_URL: pgUrl,
    FLOWGATE_DATABASE_STATEMENT_TIMEOUT_MS: '1000',
    FLOWGATE_DATABASE_QUERY_TIMEOUT_MS: '1500',
    FLOWGATE_DATABASE_CONNECT_TIMEOUT_MS: '1500',
  });
  await admin.withTokens(['alice', 'mallory', 'eve']);
  const created = await fetch(`${fg.url}/api/2.0/mlflow/experiments/create`, {
    method: 'POST',
    headers: { Authorization: admin.basicOf('alice'), 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: `alice-private-${Date.now()}` }),
  });
  aliceExperiment = ((await created.json()) as { experiment_id: string }).experiment_id;
});
afterAll(async () => {
  try {
    pgServer?.thaw();
  } catch {
    // Already gone.
  }
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await pgServer?.stop();
  await mlflow?.stop();
});

describe('an outage of the policy store', () => {
  it('opens nothing, and its 503s tell nothing of the store', async () => {
    // mallory's credential is verified (cached) before the outage; eve's never is.
    const aliceGet = `/api/2.0/mlflow/experiments/get?experiment_id=${aliceExperiment}`;
    expect((await send('GET', aliceGet, admin.basicOf('mallory'))).status).toBe(403);
    pgServer.freeze();
    try {
      // Cached credential, no grant: still refused from memory, not waved through because the store is away.
      const cached = await send('GET', aliceGet, admin.basicOf('mallory'));
      expect(cached.status, cached.text).toBe(403);
      expect(JSON.parse(cached.text).error_code).toBe('PERMISSION_DENIED');
      // Credentials only the store could check: refused (503), never let through.
      for (const auth of [admin.basicOf('eve'), basic('alice', ALICE_TOKEN_GUESS), basic('nobody-at-all', ALICE_TOKEN_GUESS)]) {
        tellsNothing(await send('GET', aliceGet, auth));
        tellsNothing(await send('POST', '/api/2.0/mlflow/experiments/delete', auth, { experiment_id: aliceExperiment }));
        tellsNothing(await send('POST', '/api/2.0/mlflow/users/create', auth, { username: 'eve-admin', is_admin: true }));
      }
      // No credential at all: 401 as always, the store is not asked.
      expect((await send('GET', aliceGet)).status).toBe(401);
      // The admin's own change: 503 with nothing of the store in it either.
      tellsNothing(await send('POST', `/api/2.0/mlflow/permissions/users/mallory/experiments/${aliceExperiment}`, adminAuth(), { permission: 'MANAGE' }));
    } finally {
      pgServer.thaw();
    }
    // Nothing done while the store was away took effect: alice's experiment is there, mallory holds nothing on it.
    const direct = await fetch(`${mlflow.url}/api/2.0/mlflow/experiments/get?experiment_id=${aliceExperiment}`);
    expect(((await direct.json()) as { experiment: { lifecycle_stage: string } }).experiment.lifecycle_stage).toBe('active');
    const afterwards = await send('GET', aliceGet, admin.basicOf('mallory'));
    expect(afterwards.status).toBe(403);
    const users = (await admin.call('GET', '/api/2.0/mlflow/permissions/users')).users as { username: string }[];
    expect(users.map((u) => u.username)).not.toContain('eve-admin');
    const logs = fg.logs.join('');
    expect(logs).not.toContain(PG_PASSWORD);
    expect(logs).not.toContain(ALICE_TOKEN_GUESS);
    expect(logs).not.toContain(admin.tokens.eve!);
  }, 90_000);
});

describe('lost create races and foreign methods', () => {
  it("a lost race's 409 carries no database text, and a non-admin's racing creates stay 403", async () => {
    const racing = await Promise.all(
      Array.from({ length: 10 }, () => send('POST', '/api/2.0/mlflow/permissions/groups', adminAuth(), { group_name: 'race-leak' })),
    );
    const lost = racing.filter((r) => r.status === 409);
    expect(lost.length).toBe(9);
    for (const r of lost) {
      expect(JSON.parse(r.text)).toEqual({ error_code: 'RESOURCE_ALREADY_EXISTS', message: expect.any(String) });
      for (const leak of ['duplicate key', 'constraint', 'Key (', 'groups_name', 'UNIQUE', '23505']) expect(r.text).not.toContain(leak);
    }
    const mallory = await Promise.all(
      Array.from({ length: 10 }, () => send('POST', '/api/2.0/mlflow/users/create', admin.basicOf('mallory'), { username: 'mallory-twin', is_admin: true })),
    );
    expect(mallory.map((r) => r.status)).toEqual(mallory.map(() => 403));
  });

  it('TRACE is refused, never echoed: admin paths and own paths 405 with Allow, MLflow routes 403 for a non-admin', async () => {
    for (const [path, auth] of [
      ['/api/2.0/mlflow/users/create', admin.basicOf('mallory')],
      ['/api/2.0/mlflow/permissions/users', adminAuth()],
      ['/readyz', undefined],
      ['/healthz', undefined],
      ['/flowgate/openapi.json', undefined],
    ] as const) {
      const r = await send('TRACE', path, auth);
      expect(r.status, `${path}: ${r.text}`).toBe(405);
      expect(r.headers.allow, path).toBeTruthy();
      expect(JSON.parse(r.text).error_code).toBe('METHOD_NOT_ALLOWED');
      expect(r.text).not.toMatch(/authorization|Basic /i);
    }
    // Anonymous on an admin path: authentication comes first, and which paths exist is not told.
    expect((await send('TRACE', '/api/2.0/mlflow/users/create')).status).toBe(401);
    const mlflowRoute = await send('TRACE', '/api/2.0/mlflow/experiments/search', admin.basicOf('mallory'));
    expect(mlflowRoute.status).toBe(403);
    expect(mlflowRoute.text).not.toMatch(/authorization|Basic /i);
  });
});
