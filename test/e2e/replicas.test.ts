import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

/**
 * flowgate as an ingress: three processes on one PostgreSQL store in front of one real MLflow. What
 * an administrator changes through any replica holds on all of them within a second.
 */
let pg: PostgresServer;
let mlflow: MlflowServer;
let databaseUrl: string;
const replicas: FlowgateProcess[] = [];

const startReplica = () =>
  startFlowgateProcess({
    env: {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_DATABASE_URL: databaseUrl,
      FLOWGATE_STORE_WATCH_MS: '1000',
      FLOWGATE_SESSION_COOKIE_SECURE: 'false',
    },
  });

beforeAll(async () => {
  [pg, mlflow] = await Promise.all([startPostgres(), startMlflowServer()]);
  databaseUrl = await pg.createDatabase('replicas');
  // Started together: the migrations run once, under the advisory lock.
  replicas.push(...(await Promise.all([startReplica(), startReplica(), startReplica()])));
}, 300_000);

afterAll(async () => {
  await Promise.all(replicas.map((r) => r.stop()));
  await mlflow?.stop();
  await pg?.stop();
});

const admin = (r: FlowgateProcess) => ({
  post: (path: string, body: object) => request(r.url).post(path).set('Authorization', adminAuth()).send(body),
  patch: (path: string, body: object) => request(r.url).patch(path).set('Authorization', adminAuth()).send(body),
  delete: (path: string) => request(r.url).delete(path).set('Authorization', adminAuth()),
  get: (path: string) => request(r.url).get(path).set('Authorization', adminAuth()),
});

/** Polls every 10 ms until `check` holds on every replica given; the time it took. */
async function within(ms: number, targets: readonly FlowgateProcess[], check: (r: FlowgateProcess) => Promise<boolean>): Promise<number> {
  const started = Date.now();
  const pending = new Set(targets);
  while (pending.size > 0) {
    for (const r of [...pending]) if (await check(r)) pending.delete(r);
    if (pending.size === 0) break;
    if (Date.now() - started > ms) throw new Error(`not on ${pending.size} replica(s) within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
  return Date.now() - started;
}

async function newUserWithToken(via: FlowgateProcess, username: string): Promise<string> {
  expect((await admin(via).post('/api/2.0/mlflow/users/create', { username })).status).toBe(201);
  const minted = await admin(via).patch('/api/2.0/mlflow/permissions/users/access-token', { username });
  expect(minted.status).toBe(200);
  return minted.body.token as string;
}

async function newExperiment(name: string): Promise<string> {
  const created = await admin(replicas[0]!).post('/api/2.0/mlflow/experiments/create', { name });
  expect(created.status).toBe(200);
  return created.body.experiment_id as string;
}

const readExperiment = (r: FlowgateProcess, id: string, auth: string) =>
  request(r.url).get(`/api/2.0/mlflow/experiments/get?experiment_id=${id}`).set('Authorization', auth);

describe('three flowgate replicas on one PostgreSQL store', () => {
  it('a grant made on one replica applies on the others within 1 s; removing it, likewise', async () => {
    const [a, b, c] = replicas as [FlowgateProcess, FlowgateProcess, FlowgateProcess];
    const token = await newUserWithToken(a, 'grace');
    const id = await newExperiment('replicas-grant');
    const auth = basic('grace', token);
    // Every replica has now cached grace's token and decided without a grant.
    for (const r of [a, b, c]) expect((await readExperiment(r, id, auth)).status).toBe(403);

    expect((await admin(b).post(`/api/2.0/mlflow/permissions/users/grace/experiments/${id}`, { permission: 'READ' })).status).toBe(201);
    await within(1000, [a, b, c], async (r) => (await readExperiment(r, id, auth)).status === 200);

    expect((await admin(c).delete(`/api/2.0/mlflow/permissions/users/grace/experiments/${id}`)).status).toBe(200);
    await within(1000, [a, b, c], async (r) => (await readExperiment(r, id, auth)).status === 403);
  });

  it('a token revoked on one replica fails on all within 1 s; a deleted user too', async () => {
    const [a, b, c] = replicas as [FlowgateProcess, FlowgateProcess, FlowgateProcess];
    const token = await newUserWithToken(a, 'henry');
    const auth = basic('henry', token);
    const search = (r: FlowgateProcess, credentials: string) =>
      request(r.url).get('/api/2.0/mlflow/experiments/search?max_results=1').set('Authorization', credentials);
    for (const r of [a, b, c]) expect((await search(r, auth)).status).toBe(200);

    expect((await admin(b).delete('/api/2.0/mlflow/permissions/users/henry/access-token')).status).toBe(200);
    await within(1000, [a, b, c], async (r) => (await search(r, auth)).status === 401);

    const ivy = basic('ivy', await newUserWithToken(c, 'ivy'));
    for (const r of [a, b, c]) expect((await search(r, ivy)).status).toBe(200);
    expect((await admin(a).delete('/api/2.0/mlflow/permissions/users/ivy')).status).toBe(200);
    await within(1000, [a, b, c], async (r) => (await search(r, ivy)).status === 401);
  });

  it('a session opened on one replica is valid on the others, and ends on all at sign-out', async () => {
    const [a, b, c] = replicas as [FlowgateProcess, FlowgateProcess, FlowgateProcess];
    const token = await newUserWithToken(a, 'june');
    const signedIn = await request(a.url)
      .post('/flowgate/login')
      .set('Origin', a.origin)
      .type('form')
      .send({ username: 'june', token, return_to: '/' });
    expect(signedIn.status).toBe(302);
    const cookie = String(signedIn.headers['set-cookie']).split(';')[0]!;
    const asJune = (r: FlowgateProcess) => request(r.url).get('/api/2.0/mlflow/experiments/search?max_results=1').set('Cookie', cookie);
    for (const r of [a, b, c]) expect((await asJune(r)).status).toBe(200);

    const out = await request(b.url).post('/flowgate/logout').set('Origin', b.origin).set('Cookie', cookie);
    expect(out.status).toBe(302);
    await within(1000, [a, b, c], async (r) => (await asJune(r)).status === 401);
  });

  it('kill -9 of a replica during 1,000 concurrent admin writes loses no acknowledged write', async () => {
    const victim = await startReplica();
    const targets = [replicas[0]!, replicas[1]!, victim];
    const acknowledged: string[] = [];
    let next = 0;
    let killed = false;
    async function worker(): Promise<void> {
      while (next < 1000) {
        const i = next++;
        const name = `bulk-${i}`;
        if (!killed && acknowledged.length >= 300) {
          killed = true;
          victim.child.kill('SIGKILL');
        }
        const res = await admin(targets[i % 3]!)
          .post('/api/2.0/mlflow/permissions/groups', { group_name: name })
          .catch(() => undefined);
        if (res && res.status === 201) acknowledged.push(name);
      }
    }
    await Promise.all(Array.from({ length: 50 }, worker));
    await victim.stop();
    expect(killed).toBe(true);
    expect(acknowledged.length).toBeGreaterThan(600);

    const listed = await admin(replicas[0]!).get('/api/2.0/mlflow/permissions/groups');
    expect(listed.status).toBe(200);
    const stored = new Set((listed.body.groups as Array<{ name: string }>).map((g) => g.name));
    const lost = acknowledged.filter((n) => !stored.has(n));
    expect(lost).toEqual([]);
  });

  it('PostgreSQL stopped: unready, and what needs the store is refused; started again: ready, no restart', async () => {
    const [a, b] = replicas as [FlowgateProcess, FlowgateProcess];
    const token = await newUserWithToken(a, 'kim');
    const pid = a.pid;
    await pg.pause();
    try {
      await within(10_000, [a, b], async (r) => (await request(r.url).get('/readyz')).status === 503);
      const unready = await request(a.url).get('/readyz');
      expect(unready.body).toMatchObject({ status: 'unready', store: false });
      // kim's token was never verified on b: b cannot check it, so it refuses it.
      const refused = await request(b.url).get('/api/2.0/mlflow/experiments/search?max_results=1').set('Authorization', basic('kim', token));
      expect(refused.status).toBeGreaterThanOrEqual(401);
      expect(refused.status).not.toBe(200);
      expect(refused.body).toHaveProperty('error_code');
    } finally {
      await pg.start();
    }
    await within(20_000, [a, b], async (r) => (await request(r.url).get('/readyz')).status === 200);
    expect(a.pid).toBe(pid);
    expect(a.child.exitCode).toBeNull();
    const served = await request(b.url).get('/api/2.0/mlflow/experiments/search?max_results=1').set('Authorization', basic('kim', token));
    expect(served.status).toBe(200);
  });
});
