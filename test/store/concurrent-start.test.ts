import pg from 'pg';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { adminAuth, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

let server: PostgresServer;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const started: TestFlowgate[] = [];
beforeAll(async () => {
  [server, upstream] = await Promise.all([startPostgres(), startStubUpstream()]);
});
afterAll(async () => {
  await Promise.all(started.map((fg) => fg.close()));
  await upstream?.close();
  await server?.stop();
});

it('five flowgates starting at once on a new PostgreSQL store migrate it once and make the bootstrap admin once', async () => {
  const url = await server.createDatabase();
  const outcomes = await Promise.allSettled(
    Array.from({ length: 5 }, () => startTestFlowgate({ FLOWGATE_DATABASE_URL: url, FLOWGATE_UPSTREAM_URL: upstream.url })),
  );
  for (const o of outcomes) if (o.status === 'fulfilled') started.push(o.value);
  expect(outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
  const sql = started[0]!.store.sql;
  expect(await sql.get("SELECT count(*) AS n FROM users WHERE username = 'admin'")).toEqual({ n: 1 });
  expect(await sql.get("SELECT count(*) AS n FROM audit_log WHERE action = 'token.install'")).toEqual({ n: 1 });
  for (const fg of started) expect((await request(fg.url).get('/api/2.0/mlflow/permissions/users').set('Authorization', adminAuth())).status).toBe(200);
});

it('three flowgates starting at once with a workspace group rule all start, and each group is given its role once', async () => {
  const url = await server.createDatabase();
  const env = { FLOWGATE_DATABASE_URL: url, FLOWGATE_UPSTREAM_URL: upstream.url };
  // The store and its groups exist (made by an earlier release without the rule).
  const first = await startTestFlowgate(env);
  await first.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query("INSERT INTO groups (name, created_at) SELECT 'team-' || g, 0 FROM generate_series(1, 300) g");
  } finally {
    await c.end();
  }

  // Each gives the same groups their grants at start: before, the ones that lost a race to create a grant failed to start.
  const withRule = { ...env, FLOWGATE_WORKSPACE_GROUP_RULES: 'team-*=team-*' };
  const outcomes = await Promise.allSettled(Array.from({ length: 3 }, () => startTestFlowgate(withRule)));
  for (const o of outcomes) if (o.status === 'fulfilled') started.push(o.value);
  expect(outcomes.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason))).toEqual([]);
  const sql = started.at(-1)!.store.sql;
  expect(await sql.get("SELECT count(*) AS n FROM grants WHERE resource_kind = 'workspace' AND permission = 'USE'")).toEqual({ n: 300 });
  expect(await sql.get('SELECT count(*) AS n FROM workspace_rule_grants')).toEqual({ n: 300 });
}, 120_000);
