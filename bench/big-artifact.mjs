// `node bench/big-artifact.mjs` (after `npm run build`): one big artifact up and down through
// flowgate (`node dist/cli.js serve`) in front of the real MLflow (pinned venv, proxied artifacts,
// no static prefix), each in its own process, and the same straight to MLflow for comparison.
// The artifact is generated on the fly from a stream (nothing is written on the client side);
// MLflow stores it under its temporary artifacts dir, removed after each transfer.
// Prints MB/s up and down, the SHA-256 check, flowgate's peak RSS (VmHWM), and how a denied
// upload of the same size (a READ-only user) ends: time, bytes the client got onto the wire.
//
// Knobs (environment): FLOWGATE_BIG_ARTIFACT_MB (default 1024), BENCH_JSON=1 (one JSON line on stdout).
import { execFileSync, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const MIB = 1024 * 1024;
const MB = Number(process.env.FLOWGATE_BIG_ARTIFACT_MB ?? 1024);
const SIZE = MB * MIB;
const ADMIN = { username: 'admin', token: `fgt_bench_admin_${randomBytes(16).toString('hex')}` };
const started = Date.now();
const children = new Set();
const dirs = [];
const log = (...a) => console.error(`[big-artifact +${((Date.now() - started) / 1000).toFixed(0)}s]`, ...a);
const basic = (u, t) => `Basic ${Buffer.from(`${u}:${t}`).toString('base64')}`;
const mbps = (ms) => +(SIZE / 1e6 / (ms / 1e3)).toFixed(1);
const mib = (bytes) => +(bytes / MIB).toFixed(1);

process.on('exit', () => {
  for (const c of children) {
    try {
      if (c.ownGroup) process.kill(-c.pid, 'SIGKILL');
      else c.kill('SIGKILL');
    } catch {}
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

async function waitFor(url, child, what) {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited early (${child.exitCode})`);
    const ok = await fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${what} did not come up`);
}

async function startMlflow() {
  const venv = execFileSync('bash', [join(ROOT, 'scripts/mlflow-venv.sh')], { encoding: 'utf8' }).trim().split('\n').pop();
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-bench-mlflow-'));
  dirs.push(dir);
  const port = await freePort();
  const env = { ...process.env, MLFLOW_SERVER_ENABLE_JOB_EXECUTION: 'false', MLFLOW_DISABLE_TELEMETRY: 'true', DO_NOT_TRACK: 'true' };
  const artifactsDir = join(dir, 'artifacts');
  const child = spawn(
    join(venv, 'bin/mlflow'),
    ['server', '--host', '127.0.0.1', '--port', String(port), '--backend-store-uri', `sqlite:///${join(dir, 'mlflow.db')}`,
      '--artifacts-destination', artifactsDir, '--serve-artifacts', '--workers', '1'],
    { cwd: dir, env, stdio: 'ignore', detached: true },
  );
  // ChildProcess does not expose `detached`: remember it, so the exit hook kills uvicorn's whole group.
  child.ownGroup = true;
  children.add(child);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/health`, child, 'mlflow');
  return { url, artifactsDir };
}

async function startFlowgate(upstreamUrl) {
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-bench-'));
  dirs.push(dir);
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, 'dist/cli.js'), 'serve'], {
    cwd: dir,
    env: {
      ...process.env,
      FLOWGATE_HOST: '127.0.0.1',
      FLOWGATE_PORT: String(port),
      FLOWGATE_METRICS_HOST: '127.0.0.1',
      FLOWGATE_METRICS_PORT: '0',
      FLOWGATE_DB_PATH: join(dir, 'flowgate.db'),
      FLOWGATE_UPSTREAM_URL: upstreamUrl,
      FLOWGATE_ADMIN_USERNAME: ADMIN.username,
      FLOWGATE_ADMIN_TOKEN: ADMIN.token,
      FLOWGATE_LOG_LEVEL: 'info',
    },
    stdio: 'ignore',
  });
  children.add(child);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/healthz`, child, 'flowgate');
  const kb = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]);
  return { url, peakRss: () => kb('VmHWM') * 1024 };
}

async function call(base, auth, method, path, body) {
  const r = await fetch(base + path, {
    method,
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(json)}`);
  return json;
}

/** `size` bytes: 1 MiB chunks of one random block, each stamped with its index; hashed as generated. */
function generated(size) {
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

function upload(url, headers) {
  const body = generated(SIZE);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'PUT', headers: { ...headers, 'Content-Type': 'application/octet-stream', 'Content-Length': String(SIZE) } });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, body: text, ms: performance.now() - t0, sha256: body.digest() }));
    });
    req.on('error', reject);
    body.stream.pipe(req);
  });
}

function download(url, headers) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const hash = createHash('sha256');
      let length = 0;
      res.on('data', (c) => {
        length += c.length;
        hash.update(c);
      });
      res.on('end', () => resolve({ status: res.statusCode, length, sha256: hash.digest('hex'), ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A PUT over a raw socket that keeps writing until the server closes (or all is sent), reading the answer as it comes. */
function rawUpload(url, auth) {
  const u = new URL(url);
  const t0 = performance.now();
  return new Promise((resolve) => {
    const socket = connect(Number(u.port), u.hostname);
    const block = Buffer.alloc(MIB, 7);
    let received = '';
    let responseMs = -1;
    let sent = 0;
    let finished = false;
    let serverClosed = false;
    const done = () => {
      if (finished) return;
      finished = true;
      socket.destroy();
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0), responseMs, ms: performance.now() - t0, sentMiB: mib(sent), serverClosed });
    };
    socket.on('data', (c) => {
      received += c.toString('latin1');
      if (responseMs < 0 && received.includes('\r\n\r\n')) responseMs = performance.now() - t0;
      if (sent >= SIZE && responseMs >= 0) done();
    });
    for (const e of ['end', 'error']) socket.on(e, () => ((serverClosed = true), done()));
    socket.on('close', done);
    socket.on('connect', async () => {
      socket.write(`PUT ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: ${auth}\r\nContent-Length: ${SIZE}\r\n\r\n`);
      while (sent < SIZE && !finished) {
        const n = Math.min(MIB, SIZE - sent);
        const more = socket.write(n === MIB ? block : block.subarray(0, n));
        sent += n;
        if (!more) await new Promise((r) => (socket.once('drain', r), socket.once('close', r)));
      }
      if (responseMs >= 0) done();
    });
  });
}

async function roundTrip(label, base, headers, exp, run, artifactsDir) {
  const path = `/api/2.0/mlflow-artifacts/artifacts/${exp}/${run}/artifacts/${label}.bin`;
  const up = await upload(base + path, headers);
  if (up.status !== 200) throw new Error(`${label} upload → ${up.status} ${up.body}`);
  const stored = join(artifactsDir, exp, run, 'artifacts', `${label}.bin`);
  if (statSync(stored).size !== SIZE) throw new Error(`${label}: MLflow stored ${statSync(stored).size} bytes`);
  log(`${label}: up ${(up.ms / 1e3).toFixed(1)} s`);
  const down = await download(base + path, headers);
  rmSync(stored, { force: true });
  log(`${label}: down ${(down.ms / 1e3).toFixed(1)} s`);
  return {
    upload: { s: +(up.ms / 1e3).toFixed(1), MBps: mbps(up.ms) },
    download: { s: +(down.ms / 1e3).toFixed(1), MBps: mbps(down.ms) },
    intact: down.status === 200 && down.length === SIZE && down.sha256 === up.sha256,
  };
}

async function main() {
  log(`${MB} MiB; starting MLflow and flowgate (dist/cli.js serve)`);
  const mlflow = await startMlflow();
  const fg = await startFlowgate(mlflow.url);
  const admin = basic(ADMIN.username, ADMIN.token);
  const exp = (await call(fg.url, admin, 'POST', '/api/2.0/mlflow/experiments/create', { name: `big-${Date.now()}` })).experiment_id;
  const run = (await call(fg.url, admin, 'POST', '/api/2.0/mlflow/runs/create', { experiment_id: exp })).run.info.run_id;
  await call(fg.url, admin, 'POST', '/api/2.0/mlflow/users/create', { username: 'reader' });
  const readerToken = (await call(fg.url, admin, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', {
    username: 'reader',
    expiration: new Date(Date.now() + 86_400_000).toISOString(),
  })).token;
  await call(fg.url, admin, 'POST', `/api/2.0/mlflow/permissions/users/reader/experiments/${exp}`, { permission: 'READ' });
  const idle = fg.peakRss();

  const direct = await roundTrip('direct', mlflow.url, {}, exp, run, mlflow.artifactsDir);
  const viaFlowgate = await roundTrip('flowgate', fg.url, { Authorization: admin }, exp, run, mlflow.artifactsDir);
  const peak = fg.peakRss();
  const denied = await rawUpload(`${fg.url}/api/2.0/mlflow-artifacts/artifacts/${exp}/${run}/artifacts/denied.bin`, basic('reader', readerToken));

  const result = {
    sizeMiB: MB,
    directToMlflow: direct,
    throughFlowgate: viaFlowgate,
    flowgatePeakRssMiB: { idle: mib(idle), afterTransfers: mib(peak) },
    deniedUpload: { ...denied, ms: Math.round(denied.ms), responseMs: Math.round(denied.responseMs) },
  };
  if (process.env.BENCH_JSON) process.stdout.write(`${JSON.stringify(result)}\n`);
  else console.log(JSON.stringify(result, null, 2));
  if (!direct.intact || !viaFlowgate.intact || denied.status !== 403) process.exitCode = 1;
}

main().then(
  () => process.exit(),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
