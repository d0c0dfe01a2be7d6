import { createHash, randomBytes } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * Issue 3, bodies stream: a big artifact (FLOWGATE_BIG_ARTIFACT_MB, default 1024 MiB) goes up and
 * down through flowgate — run as the operator runs it, `node dist/cli.js serve` — in front of the
 * real MLflow, generated on the fly on the client side, with flowgate's peak RSS (VmHWM) bounded;
 * and a READ-only user's upload of the same size is refused without flowgate reading the body.
 */
const MIB = 1024 * 1024;
const SIZE_MB = Number(process.env.FLOWGATE_BIG_ARTIFACT_MB ?? 1024);
const SIZE = SIZE_MB * MIB;
const PEAK_RSS_LIMIT = 200 * MIB;

let mlflow: MlflowServer;
let fg: FlowgateProcess;
let exp = '';
let run = '';
let readerToken = '';
const mib = (bytes: number) => +(bytes / MIB).toFixed(1);

async function call(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(fg.url + path, {
    method,
    headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await r.json()) as Record<string, unknown>;
  if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(json)}`);
  return json;
}

/** `size` bytes, 1 MiB chunks of one random block each stamped with its index, hashed as generated. */
function generated(size: number) {
  const block = randomBytes(MIB);
  const hash = createHash('sha256');
  function* chunks() {
    for (let sent = 0, i = 0; sent < size; i++) {
      const chunk = Buffer.from(block.subarray(0, Math.min(MIB, size - sent)));
      chunk.writeUInt32BE(i, 0);
      hash.update(chunk);
      sent += chunk.length;
      yield chunk;
    }
  }
  return { stream: Readable.from(chunks(), { objectMode: false }), digest: () => hash.digest('hex') };
}

function upload(url: string, auth: string, size: number): Promise<{ status: number; body: string; ms: number; sha256: string }> {
  const body = generated(size);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'PUT',
      headers: { Authorization: auth, 'Content-Type': 'application/octet-stream', 'Content-Length': String(size) },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, ms: performance.now() - t0, sha256: body.digest() }));
    });
    req.on('error', reject);
    body.stream.pipe(req);
  });
}

function download(url: string, auth: string): Promise<{ status: number; length: number; ms: number; sha256: string }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { Authorization: auth } }, (res) => {
      const hash = createHash('sha256');
      let length = 0;
      res.on('data', (c: Buffer) => {
        length += c.length;
        hash.update(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, length, ms: performance.now() - t0, sha256: hash.digest('hex') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * A PUT of `size` declared bytes over a raw socket that keeps sending until the server closes or
 * everything is sent, reading the answer as it comes (so an early answer is seen even while the
 * client is still writing).
 */
function rawUpload(url: string, auth: string, size: number) {
  const u = new URL(url);
  const t0 = performance.now();
  return new Promise<{ status: number; responseMs: number; doneMs: number; bytesSent: number; serverClosed: boolean }>((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    const block = Buffer.alloc(MIB, 7);
    let received = '';
    let responseMs = -1;
    let serverClosed = false;
    let finished = false;
    let sent = 0;
    const done = () => {
      if (finished) return;
      finished = true;
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0);
      socket.destroy();
      resolve({ status, responseMs, doneMs: performance.now() - t0, bytesSent: sent, serverClosed });
    };
    socket.on('data', (c: Buffer) => {
      received += c.toString('latin1');
      if (responseMs < 0 && received.includes('\r\n\r\n')) responseMs = performance.now() - t0;
      if (sent >= size && responseMs >= 0) done();
    });
    socket.on('end', () => {
      serverClosed = true;
      done();
    });
    socket.on('error', () => {
      serverClosed = true;
      done();
    });
    socket.on('close', done);
    socket.on('connect', async () => {
      socket.write(
        `PUT ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: ${auth}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${size}\r\n\r\n`,
      );
      while (sent < size && !finished) {
        const n = Math.min(MIB, size - sent);
        const more = socket.write(n === MIB ? block : block.subarray(0, n));
        sent += n;
        if (!more) await new Promise<void>((r) => {
          socket.once('drain', r);
          socket.once('close', r);
        });
      }
      if (responseMs >= 0) done();
    });
  });
}

const figures: Record<string, unknown> = {};

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startFlowgateProcess({ env: { FLOWGATE_UPSTREAM_URL: mlflow.url } });
  exp = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: `big-${Date.now().toString(36)}` })).experiment_id as string;
  run = ((await call('POST', '/api/2.0/mlflow/runs/create', { experiment_id: exp })).run as { info: { run_id: string } }).info.run_id;
  await call('POST', '/api/2.0/mlflow/users/create', { username: 'reader' });
  readerToken = (await call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', {
    username: 'reader',
    expiration: new Date(Date.now() + 86_400_000).toISOString(),
  })).token as string;
  await call('POST', `/api/2.0/mlflow/permissions/users/reader/experiments/${exp}`, { permission: 'READ' });
}, 300_000);

afterAll(async () => {
  if (Object.keys(figures).length) console.log(`[streaming] ${JSON.stringify(figures)}`);
  await fg?.stop();
  await mlflow?.stop();
});

const artifactUrl = (name: string) => `${fg.url}/api/2.0/mlflow-artifacts/artifacts/${exp}/${run}/artifacts/${name}`;
let allowedUploadMs = 0;

describe(`a ${SIZE_MB} MiB artifact through flowgate (separate process) and the real MLflow`, () => {
  it('streams up and down intact while flowgate stays under 200 MB peak RSS', async () => {
    const idle = fg.peakRss();
    const up = await upload(artifactUrl('big.bin'), adminAuth(), SIZE);
    expect(up.status, up.body).toBe(200);
    allowedUploadMs = up.ms;
    const stored = join(mlflow.artifactsDir, exp, run, 'artifacts', 'big.bin');
    expect(statSync(stored).size).toBe(SIZE);
    const afterUpload = fg.peakRss();

    const down = await download(artifactUrl('big.bin'), adminAuth());
    rmSync(stored, { force: true });
    expect(down.status).toBe(200);
    expect(down.length).toBe(SIZE);
    expect(down.sha256).toBe(up.sha256);
    const peak = fg.peakRss();

    Object.assign(figures, {
      sizeMiB: SIZE_MB,
      uploadS: +(up.ms / 1e3).toFixed(1),
      uploadMBps: +(SIZE / 1e6 / (up.ms / 1e3)).toFixed(1),
      downloadS: +(down.ms / 1e3).toFixed(1),
      downloadMBps: +(SIZE / 1e6 / (down.ms / 1e3)).toFixed(1),
      peakRssMiB: { idle: mib(idle), afterUpload: mib(afterUpload), afterDownload: mib(peak) },
    });
    expect(peak).toBeLessThan(PEAK_RSS_LIMIT);
  }, 240_000);

  it('refuses a READ-only user\'s upload of the same size without reading the body', async () => {
    expect(allowedUploadMs).toBeGreaterThan(0);
    const denied = await rawUpload(artifactUrl('denied.bin'), basic('reader', readerToken), SIZE);
    figures.deniedRaw = { ms: Math.round(denied.doneMs), responseMs: Math.round(denied.responseMs), sentMiB: mib(denied.bytesSent) };
    expect(denied.status).toBe(403);
    // flowgate answered and closed the connection: the client could not push the whole body.
    expect(denied.serverClosed).toBe(true);
    expect(denied.bytesSent).toBeLessThan(Math.min(SIZE, 64 * MIB));
    expect(denied.doneMs).toBeLessThan(Math.max(2_000, allowedUploadMs / 10));

    // The Python client's HTTP stack (requests/urllib3 writes the whole body before reading) sees the 403 too.
    const py = await runPython(
      mlflow.venv,
      `
import time, requests
class Body:
    def __init__(self, n): self.left = n; self.block = b"\\0" * (1 << 20)
    def __len__(self): return self.left
    def read(self, k=-1):
        k = min(self.left if k is None or k < 0 else k, self.left, len(self.block))
        self.left -= k
        return self.block[:k]
t = time.time()
r = requests.put(${JSON.stringify(artifactUrl('denied-py.bin'))}, data=Body(${SIZE}), auth=("reader", ${JSON.stringify(readerToken)}), timeout=120)
print(r.status_code, r.json()["error_code"], round(time.time() - t, 3))
`,
    );
    expect(py.code, py.stderr).toBe(0);
    const [status, code, secs] = py.stdout.trim().split(' ');
    figures.deniedPython = { status: Number(status), s: Number(secs) };
    expect([Number(status), code]).toEqual([403, 'PERMISSION_DENIED']);
    expect(Number(secs) * 1e3).toBeLessThan(Math.max(2_000, allowedUploadMs / 10));
    // Nothing landed in MLflow.
    expect(() => statSync(join(mlflow.artifactsDir, exp, run, 'artifacts', 'denied.bin'))).toThrow();
    // flowgate is fine afterwards.
    expect((await fetch(`${fg.url}/healthz`)).status).toBe(200);
  }, 120_000);
});
