import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { eventually } from '../helpers/prom.js';
import { PROBE_PATH } from '../../src/upstream/mlflow-probe.js';

/** Headers a client might send hoping to sway a probe; none of them may change the answer. */
const CLIENT_HEADERS: ReadonlyArray<Record<string, string>> = [
  {},
  { 'User-Agent': 'kube-probe/1.31' },
  { 'User-Agent': 'GoogleHC/1.0', 'X-Forwarded-For': '127.0.0.1', 'X-Real-Ip': '10.0.0.1' },
  { Authorization: basic(ADMIN.username, ADMIN.token), 'X-Forwarded-User': 'admin' },
  { Authorization: basic(ADMIN.username, 'wrong'), Cookie: 'flowgate_session=x' },
  { 'X-Request-Id': 'probe-1', Host: 'internal.example' },
];

async function probeAll(url: string, path: string): Promise<number[]> {
  const statuses: number[] = [];
  for (const headers of CLIENT_HEADERS) {
    let r = request(url).get(path);
    for (const [k, v] of Object.entries(headers)) r = r.set(k, v);
    statuses.push((await r).status);
  }
  return statuses;
}

describe('readiness against the real MLflow', () => {
  let mlflow: MlflowServer | undefined;
  let fg: TestFlowgate;
  let port: number;

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    port = mlflow.port;
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  });
  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    if (fg) removeDir(fg.dir);
  });

  it('is live and ready while MLflow answers, whatever the client sends', async () => {
    const ready = await request(fg.url).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', store: true, upstream: true });
    expect(await probeAll(fg.url, '/readyz')).toEqual(CLIENT_HEADERS.map(() => 200));
    expect(await probeAll(fg.url, '/healthz')).toEqual(CLIENT_HEADERS.map(() => 200));
  });

  it('turns unready when MLflow stops (still live), and ready again when it returns', async () => {
    await mlflow!.stop();
    mlflow = undefined;

    // A check made just before the stop may still be reused for its short lifetime (maxAgeMs, 1 s); the
    // deadline is for a loaded machine, where one probe (timeout 2 s) and its request may take seconds.
    await eventually(async () => {
      const down = await request(fg.url).get('/readyz');
      expect(down.status).toBe(503);
      expect(down.body).toEqual({ status: 'unready', store: true, upstream: false, reason: 'mlflow-unreachable' });
    }, 20_000);
    expect(await probeAll(fg.url, '/readyz')).toEqual(CLIENT_HEADERS.map(() => 503));
    // Liveness is about flowgate itself: a restart would not bring MLflow back.
    expect(await probeAll(fg.url, '/healthz')).toEqual(CLIENT_HEADERS.map(() => 200));

    mlflow = await startMlflowServer({ port });
    await eventually(async () => {
      const back = await request(fg.url).get('/readyz');
      expect(back.status).toBe(200);
      expect(back.body).toEqual({ status: 'ready', store: true, upstream: true });
    }, 20_000);
    expect(await probeAll(fg.url, '/readyz')).toEqual(CLIENT_HEADERS.map(() => 200));
  }, 240_000);
});

describe('readiness under a base path', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let healthy = true;

  beforeAll(async () => {
    upstream = await startStubUpstream((r) =>
      r.url === PROBE_PATH ? { status: healthy ? 200 : 503, body: {} } : { status: 404, body: {} },
    );
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_BASE_PATH: '/mlflow' });
  });
  afterAll(async () => {
    await fg?.close();
    await upstream?.close();
    if (fg) removeDir(fg.dir);
  });

  it('answers under the base path only, and follows an unhealthy MLflow', async () => {
    expect((await request(fg.url).get('/mlflow/readyz')).status).toBe(200);
    expect((await request(fg.url).get('/mlflow/healthz')).status).toBe(200);
    expect((await request(fg.url).head('/mlflow/readyz')).status).toBe(200);
    expect((await request(fg.url).get('/readyz')).status).toBe(404);
    healthy = false;
    await new Promise((r) => setTimeout(r, 1100)); // a readiness result is reused for a second
    expect(await probeAll(fg.url, '/mlflow/readyz')).toEqual(CLIENT_HEADERS.map(() => 503));
    healthy = true;
    await new Promise((r) => setTimeout(r, 1100));
    expect((await request(fg.url).get('/mlflow/readyz')).status).toBe(200);
  });

  it('shares one check among a burst of probes', async () => {
    await new Promise((r) => setTimeout(r, 1100));
    const before = upstream.seen.filter((s) => s.url === PROBE_PATH).length;
    const statuses = await Promise.all(Array.from({ length: 25 }, () => request(fg.url).get('/mlflow/readyz').then((r) => r.status)));
    expect(statuses).toEqual(statuses.map(() => 200));
    expect(upstream.seen.filter((s) => s.url === PROBE_PATH).length - before).toBe(1);
  });
});

describe('readiness when MLflow refuses the Host flowgate sends', () => {
  let mlflow: MlflowServer | undefined;
  let fg: TestFlowgate;

  beforeAll(async () => {
    // What `mlflow server --allowed-hosts mlflow.example.internal` sets: the upstream URL's 127.0.0.1:<port> is not in it.
    mlflow = await startMlflowServer({ env: { MLFLOW_SERVER_ALLOWED_HOSTS: 'mlflow.example.internal' } });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  });
  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    if (fg) removeDir(fg.dir);
  });

  it("is unready with MLflow's refusal as the reason, though MLflow's own /health answers", async () => {
    // MLflow exempts /health from its Host check: a probe of it alone would call this MLflow healthy.
    expect((await fetch(`${mlflow!.url}/health`)).status).toBe(200);
    const refused = await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=0').set('Authorization', basic(ADMIN.username, ADMIN.token));
    expect(refused.status).toBe(403);

    const ready = await request(fg.url).get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ status: 'unready', store: true, upstream: false, reason: 'mlflow-refuses-host' });
    // The public answer names no address; the log tells the operator which host to allow.
    expect(JSON.stringify(ready.body)).not.toContain('127.0.0.1');
    const lines = fg.logs.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    const warning = lines.find((l) => l.msg === 'flowgate is not ready');
    expect(warning).toMatchObject({ level: 'warn', reason: 'mlflow-refuses-host' });
    expect(String(warning!.detail)).toContain(`"127.0.0.1:${mlflow!.port}"`);
    expect(String(warning!.detail)).toContain('--allowed-hosts');
  }, 180_000);
});
