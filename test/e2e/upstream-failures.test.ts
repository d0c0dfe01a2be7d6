import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminAuth, basic } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps } from '../helpers/python-ops.js';

/**
 * Issue 3, errors when MLflow is down or misbehaves, with flowgate as its own process
 * (`node dist/cli.js serve`):
 *   MLflow stopped            → 503 TEMPORARILY_UNAVAILABLE (and the Python client raises it at once)
 *   MLflow never answers      → 504 GATEWAY_TIMEOUT after FLOWGATE_UPSTREAM_TIMEOUT_MS
 *   MLflow resets the socket  → 502 BAD_GATEWAY before its headers; after them, the client's
 *                               connection is cut (the status line is already gone)
 *   a resolver look-up fails  → 503, and the request is never forwarded
 * plus keep-alive: sequential requests share a few upstream connections.
 */

interface Stub {
  readonly url: string;
  readonly server: Server;
  /** TCP connections MLflow's stand-in accepted so far. */
  connections: number;
  /** Requests seen: method, url, the flowgate-set user, and the upstream socket's client port. */
  readonly seen: Array<{ method: string; url: string; user: string | undefined; port: number }>;
  close(): Promise<void>;
}

/**
 * A stand-in for MLflow whose behaviour depends on the request: `experiment_id=hang` never answers,
 * `reset-before` resets the socket before any answer, `reset-mid` sends headers and part of the
 * body then resets; a `runs/get` look-up for `run_id=fail-*` answers 500 and `hang-*` never
 * answers; anything else is a small JSON 200.
 */
async function startStub(): Promise<Stub> {
  const held = new Set<Socket>();
  const stub: Omit<Stub, 'url'> & { url: string } = {
    url: '',
    server: createServer(),
    connections: 0,
    seen: [],
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of held) s.destroy();
        stub.server.closeAllConnections();
        stub.server.close(() => resolve());
      }),
  };
  stub.server.on('connection', (socket: Socket) => {
    stub.connections += 1;
    held.add(socket);
    socket.on('close', () => held.delete(socket));
  });
  stub.server.on('request', async (req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', 'http://stub');
    const user = req.headers['x-forwarded-user'];
    stub.seen.push({ method: req.method ?? '', url: req.url ?? '', user: typeof user === 'string' ? user : undefined, port: req.socket.remotePort ?? 0 });
    let raw = '';
    for await (const chunk of req) raw += (chunk as Buffer).toString();
    const body = (raw ? JSON.parse(raw) : {}) as { experiment_id?: string };
    const id = url.searchParams.get('experiment_id') ?? url.searchParams.get('run_id') ?? body.experiment_id ?? '';
    if (id === 'hang' || id.startsWith('hang-')) return; // never answers
    if (id === 'reset-before') return req.socket.resetAndDestroy();
    if (id === 'reset-mid') {
      res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(1 << 20) });
      res.write(Buffer.alloc(64 * 1024, 1), () => setTimeout(() => req.socket.resetAndDestroy(), 50));
      return;
    }
    if (id.startsWith('fail-')) {
      res.writeHead(500, { 'Content-Type': 'application/json' });
      return res.end('{"error_code":"INTERNAL_ERROR","message":"boom"}');
    }
    const answer = url.pathname.endsWith('/runs/get')
      ? { run: { info: { run_id: id, experiment_id: '7' } } }
      : { experiment: { experiment_id: id || '0', name: 'stub' } };
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(answer));
  });
  await new Promise<void>((r) => stub.server.listen(0, '127.0.0.1', r));
  stub.url = `http://127.0.0.1:${(stub.server.address() as AddressInfo).port}`;
  return stub as Stub;
}

async function adminCall(fg: FlowgateProcess, method: string, path: string, body?: unknown) {
  const r = await fetch(fg.url + path, {
    method,
    headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await r.json()) as Record<string, unknown>;
  if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(json)}`);
  return json;
}

async function createUser(fg: FlowgateProcess, username: string): Promise<string> {
  await adminCall(fg, 'POST', '/api/2.0/mlflow/users/create', { username });
  const t = await adminCall(fg, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', {
    username,
    expiration: new Date(Date.now() + 86_400_000).toISOString(),
  });
  return t.token as string;
}

/** A GET through flowgate on a fresh connection: status, parsed JSON (if any) and time. */
async function get(url: string, auth: string) {
  const t0 = performance.now();
  const r = await fetch(url, { headers: { Authorization: auth } });
  const text = await r.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = text;
  }
  return { status: r.status, json, ms: performance.now() - t0, contentType: r.headers.get('content-type') };
}

describe('MLflow stopped (the real one)', () => {
  let mlflow: MlflowServer | undefined;
  let fg: FlowgateProcess;
  let venv = '';
  let readerToken = '';
  let run = '';

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    venv = mlflow.venv;
    fg = await startFlowgateProcess({ env: { FLOWGATE_UPSTREAM_URL: mlflow.url } });
    readerToken = await createUser(fg, 'reader');
    await adminCall(fg, 'POST', '/api/2.0/mlflow/permissions/users/reader/experiments/0', { permission: 'READ' });
    run = ((await adminCall(fg, 'POST', '/api/2.0/mlflow/runs/create', { experiment_id: '0' })).run as { info: { run_id: string } }).info.run_id;
    await mlflow.stop();
    mlflow = undefined;
  }, 300_000);
  afterAll(async () => {
    await fg?.stop();
    await mlflow?.stop();
  });

  it('answers 503 TEMPORARILY_UNAVAILABLE as MLflow JSON', async () => {
    const r = await get(`${fg.url}/api/2.0/mlflow/experiments/get?experiment_id=0`, adminAuth());
    expect(r.status).toBe(503);
    expect(r.contentType).toMatch(/^application\/json/);
    expect(r.json).toEqual({ error_code: 'TEMPORARILY_UNAVAILABLE', message: 'MLflow is not reachable' });
  });

  it('a search flowgate answers itself (filtered for a non-admin) fails as MLflow JSON too, not a hang', async () => {
    const r = await fetch(`${fg.url}/api/2.0/mlflow/experiments/search`, {
      method: 'POST',
      headers: { Authorization: basic('reader', readerToken), 'Content-Type': 'application/json' },
      body: JSON.stringify({ max_results: 10 }),
      signal: AbortSignal.timeout(10_000),
    });
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ error_code: 'TEMPORARILY_UNAVAILABLE' });
  });

  it('denies with 503 when the resolver cannot look the run up (never allows)', async () => {
    const r = await get(`${fg.url}/api/2.0/mlflow/runs/get?run_id=${run}`, basic('reader', readerToken));
    expect(r.status).toBe(503);
    expect(r.json).toMatchObject({ error_code: 'TEMPORARILY_UNAVAILABLE' });
    expect((r.json as { message: string }).message).toContain(`Could not look up run ${run}`);
  });

  it('the Python client raises an MlflowException naming the 503, promptly with retries off', async () => {
    // MLflow's client treats 502/503/504 as transient: urllib3 retries them (by default 7 times with
    // backoff, ~4 minutes) and then raises "too many 503 error responses" — flowgate's JSON body is
    // not read. runOps sets MLFLOW_HTTP_REQUEST_MAX_RETRIES=0, so the exception comes at once.
    const t0 = Date.now();
    const [asAdmin, asReader] = await Promise.all([
      runOps(venv, fg.url, ADMIN.username, ADMIN.token, [['get', 'get_experiment', '0']]),
      runOps(venv, fg.url, 'reader', readerToken, [['run', 'get_run', run]]),
    ]);
    for (const outcome of [asAdmin.get, asReader.run])
      expect(outcome).toEqual({ ok: false, error: expect.stringMatching(/^INTERNAL_ERROR: API request to .* failed with exception .*Max retries exceeded/) });
    expect(asAdmin.get).toEqual({ ok: false, error: expect.stringContaining("ResponseError('too many 503 error responses')") });
    expect(Date.now() - t0).toBeLessThan(30_000);
  }, 60_000);

  it('the Python client with retries retries the 503 and then raises (no hang)', async () => {
    // flowgate's log lines are buffered and flushed at least once a second: let earlier lines land first.
    const settle = () => new Promise((r) => setTimeout(r, 1_200));
    await settle();
    const before = fg.logs().split('\n').filter((l) => l.includes('"status":503') && l.includes('experiments/get')).length;
    const t0 = Date.now();
    const py = await runPython(
      venv,
      `
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
try:
    MlflowClient().get_experiment("0")
    print("NO ERROR")
except MlflowException as e:
    print(type(e).__name__, e.error_code, "|", str(e)[:400])
`,
      {
        MLFLOW_TRACKING_URI: fg.url,
        MLFLOW_TRACKING_USERNAME: ADMIN.username,
        MLFLOW_TRACKING_PASSWORD: ADMIN.token,
        MLFLOW_HTTP_REQUEST_MAX_RETRIES: '2',
        MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR: '0',
        MLFLOW_HTTP_REQUEST_BACKOFF_JITTER: '0',
      },
      60_000,
    );
    expect(py.stdout).toMatch(/^MlflowException INTERNAL_ERROR \| .*too many 503 error responses/);
    expect(Date.now() - t0).toBeLessThan(30_000);
    // One try and two retries, each answered 503 by flowgate (log lines are flushed within a second).
    const counted = () => fg.logs().split('\n').filter((l) => l.includes('"status":503') && l.includes('experiments/get')).length - before;
    await settle();
    expect(counted()).toBe(3);
  }, 60_000);
});

describe('MLflow slow, resetting, failing look-ups, keep-alive (a stub upstream)', () => {
  let stub: Stub;
  let fg: FlowgateProcess;
  let readerToken = '';
  const experiment = (id: string) => `${fg.url}/api/2.0/mlflow/experiments/get?experiment_id=${id}`;

  beforeAll(async () => {
    stub = await startStub();
    fg = await startFlowgateProcess({ env: { FLOWGATE_UPSTREAM_URL: stub.url, FLOWGATE_UPSTREAM_TIMEOUT_MS: '1000' } });
    readerToken = await createUser(fg, 'reader');
    await adminCall(fg, 'POST', '/api/2.0/mlflow/permissions/users/reader/experiments/7', { permission: 'READ' });
  }, 60_000);
  afterAll(async () => {
    await fg?.stop();
    await stub?.close();
  });

  it('an upstream that never answers → 504 GATEWAY_TIMEOUT after FLOWGATE_UPSTREAM_TIMEOUT_MS', async () => {
    const r = await get(experiment('hang'), adminAuth());
    expect(r.status).toBe(504);
    expect(r.json).toEqual({ error_code: 'GATEWAY_TIMEOUT', message: 'MLflow did not answer in time' });
    expect(r.ms).toBeGreaterThanOrEqual(950);
    expect(r.ms).toBeLessThan(5_000);
    // A body flowgate read itself (JSON route) is forwarded from its buffer: same answer.
    const t0 = performance.now();
    const post = await fetch(`${fg.url}/api/2.0/mlflow/runs/create`, {
      method: 'POST',
      headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ experiment_id: 'hang' }),
    });
    expect(post.status).toBe(504);
    expect(await post.json()).toMatchObject({ error_code: 'GATEWAY_TIMEOUT' });
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it('an upstream that resets before answering → 502 BAD_GATEWAY', async () => {
    const r = await get(experiment('reset-before'), adminAuth());
    expect(r.status).toBe(502);
    expect(r.json).toEqual({ error_code: 'BAD_GATEWAY', message: 'MLflow closed the connection unexpectedly' });
  });

  it('an upstream that resets mid-answer → the client sees its status and a cut connection, not a hang', async () => {
    const t0 = performance.now();
    const outcome = await new Promise<{ status: number; received: number; declared: number; ended: string }>((resolve) => {
      let status = 0;
      let received = 0;
      let declared = 0;
      const req = request(experiment('reset-mid'), { headers: { Authorization: adminAuth() } }, (res) => {
        status = res.statusCode ?? 0;
        declared = Number(res.headers['content-length']);
        res.on('data', (c: Buffer) => (received += c.length));
        res.on('end', () => resolve({ status, received, declared, ended: 'complete' }));
        res.on('aborted', () => resolve({ status, received, declared, ended: 'aborted' }));
        res.on('error', () => resolve({ status, received, declared, ended: 'aborted' }));
      });
      req.on('error', (e) => resolve({ status, received, declared, ended: `request error ${(e as NodeJS.ErrnoException).code}` }));
      req.end();
    });
    // The 200 and its headers were already relayed when MLflow went away: flowgate cannot turn it
    // into a 502 any more, so it cuts the client's connection (the body is visibly short).
    expect(outcome).toMatchObject({ status: 200, declared: 1 << 20, ended: 'aborted' });
    expect(outcome.received).toBeLessThan(1 << 20);
    expect(performance.now() - t0).toBeLessThan(5_000);
  });

  it('a look-up MLflow answers with 500 → 503, and the request is never forwarded', async () => {
    const before = stub.seen.length;
    const r = await get(`${fg.url}/api/2.0/mlflow/runs/get?run_id=fail-1`, basic('reader', readerToken));
    expect(r.status).toBe(503);
    expect(r.json).toEqual({ error_code: 'TEMPORARILY_UNAVAILABLE', message: 'Could not look up run fail-1: tracking server answered 500' });
    // Only flowgate's own look-up reached the upstream (no user header): the call itself never did.
    expect(stub.seen.slice(before)).toEqual([expect.objectContaining({ method: 'GET', user: undefined })]);
  });

  it('a look-up MLflow never answers → 503 once the look-up times out, never forwarded', async () => {
    const before = stub.seen.length;
    const r = await get(`${fg.url}/api/2.0/mlflow/runs/get?run_id=hang-1`, basic('reader', readerToken));
    expect(r.status).toBe(503);
    expect(r.json).toEqual({ error_code: 'TEMPORARILY_UNAVAILABLE', message: 'Could not look up run hang-1: the tracking server did not answer' });
    expect(stub.seen.slice(before).every((s) => s.user === undefined)).toBe(true);
    // Sanity: the same user's call on a run the look-up places in a readable experiment goes through.
    const ok = await get(`${fg.url}/api/2.0/mlflow/runs/get?run_id=ok-1`, basic('reader', readerToken));
    expect(ok.status).toBe(200);
    expect(stub.seen.at(-1)).toMatchObject({ user: 'reader', url: '/api/2.0/mlflow/runs/get?run_id=ok-1' });
  }, 30_000);

  it('keeps upstream connections alive: 50 sequential requests, each on a new client connection, share a few upstream sockets', async () => {
    const N = 50;
    const connectionsBefore = stub.connections;
    const seenBefore = stub.seen.length;
    for (let i = 0; i < N; i++) {
      const status = await new Promise<number>((resolve, reject) => {
        // agent: false — a fresh client connection each time, so any reuse is flowgate's.
        const req = request(experiment(String(i)), { agent: false, headers: { Authorization: adminAuth() } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(200);
    }
    const served = stub.seen.slice(seenBefore);
    expect(served).toHaveLength(N);
    const newConnections = stub.connections - connectionsBefore;
    const sockets = new Set(served.map((s) => s.port)).size;
    console.log(`[keep-alive] ${N} sequential requests: ${newConnections} new upstream connection(s), ${sockets} upstream socket(s) used`);
    expect(newConnections).toBeLessThanOrEqual(2);
    expect(sockets).toBeLessThanOrEqual(2);
  });
});
