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
