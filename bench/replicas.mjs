// (p) flowgate replicas on one PostgreSQL store: the decision from a policy index loaded out of
// PostgreSQL beside the same store in SQLite, and how long a revoke and a grant made through one
// replica take to hold on the other. Run by `npm run bench` after run.mjs; alone:
//   npm run build && node bench/replicas.mjs
// Knobs: BENCH_PROPAGATION_ROUNDS (100).
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPostgres } from '../scripts/postgres-cluster.mjs';
import { copyStore } from '../dist/store/copy.js';
import { openSqliteStore } from '../dist/store/database.js';
import { openStore } from '../dist/store/store.js';
import { decisionMicrobench, seedLargeStore } from './large-store.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const ROUNDS = Number(process.env.BENCH_PROPAGATION_ROUNDS ?? 100);
const ADMIN = { username: 'admin', token: `fgt_bench_admin_${randomBytes(16).toString('hex')}` };
const basic = (u, t) => `Basic ${Buffer.from(`${u}:${t}`).toString('base64')}`;
const log = (...a) => console.error('[bench replicas]', ...a);
const children = new Set();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

function stubUpstream() {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const body = JSON.stringify({ experiment: { experiment_id: '1', name: 'e' }, experiments: [] });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${server.address().port}` })));
}

function startReplica(databaseUrl, upstreamUrl) {
  const child = spawn(process.execPath, [join(ROOT, 'dist/cli.js'), 'serve'], {
    env: {
      PATH: process.env.PATH,
      FLOWGATE_HOST: '127.0.0.1',
      FLOWGATE_PORT: '0',
      FLOWGATE_METRICS_HOST: '127.0.0.1',
      FLOWGATE_METRICS_PORT: '0',
      FLOWGATE_DATABASE_URL: databaseUrl,
      FLOWGATE_UPSTREAM_URL: upstreamUrl,
      FLOWGATE_ADMIN_USERNAME: ADMIN.username,
      FLOWGATE_ADMIN_TOKEN: ADMIN.token,
      FLOWGATE_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let err = '';
  child.stderr.on('data', (c) => (err += c));
  return new Promise((resolve, reject) => {
    let out = '';
    const listening = (c) => {
      out += c;
      const m = out.match(/"url":"(http:\/\/127\.0\.0\.1:\d+)","upstream"/);
      if (!m) return;
      // From here on the request lines are drained unread.
      child.stdout.off('data', listening);
      child.stdout.resume();
      resolve({ child, url: m[1] });
    };
    child.stdout.on('data', listening);
    child.once('exit', (code) => reject(new Error(`flowgate exited (${code}): ${err || out}`)));
  });
}

async function call(base, method, path, auth, body) {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: auth, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  await res.arrayBuffer();
  return res.status;
}

async function adminJson(base, method, path, body) {
  const res = await fetch(base + path, { method, headers: { Authorization: basic(ADMIN.username, ADMIN.token), 'Content-Type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
  const json = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Milliseconds from `acknowledged` until `holds()` is true on the other replica (polled back to back). */
async function until(holds, acknowledged) {
  for (;;) {
    if (await holds()) return performance.now() - acknowledged;
    if (performance.now() - acknowledged > 10_000) throw new Error('not propagated within 10 s');
  }
}

const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

async function propagation(a, b) {
  await adminJson(a, 'POST', '/api/2.0/mlflow/users/create', { username: 'bench-prop' });
  const read = (token) => call(b, 'GET', '/api/2.0/mlflow/experiments/get?experiment_id=1', basic('bench-prop', token));
  const revokes = [];
  const grants = [];
  const removals = [];
  const deletions = [];
  for (let i = 0; i < ROUNDS; i++) {
    const { token } = await adminJson(a, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'bench-prop' });
    // B learns of the new token (and caches it); no grant yet.
    await until(async () => (await read(token)) === 403, performance.now());
    await adminJson(a, 'POST', '/api/2.0/mlflow/permissions/users/bench-prop/experiments/1', { permission: 'READ' });
    grants.push(await until(async () => (await read(token)) === 200, performance.now()));
    await adminJson(a, 'DELETE', '/api/2.0/mlflow/permissions/users/bench-prop/experiments/1');
    removals.push(await until(async () => (await read(token)) === 403, performance.now()));
    await adminJson(a, 'DELETE', '/api/2.0/mlflow/permissions/users/bench-prop/access-token');
    revokes.push(await until(async () => (await read(token)) === 401, performance.now()));

    const doomed = `bench-doomed-${i}`;
    await adminJson(a, 'POST', '/api/2.0/mlflow/users/create', { username: doomed });
    const { token: doomedToken } = await adminJson(a, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: doomed });
    const readAsDoomed = () => call(b, 'GET', '/api/2.0/mlflow/experiments/get?experiment_id=1', basic(doomed, doomedToken));
    await until(async () => (await readAsDoomed()) === 403, performance.now());
    await adminJson(a, 'DELETE', `/api/2.0/mlflow/permissions/users/${doomed}`);
    deletions.push(await until(async () => (await readAsDoomed()) === 401, performance.now()));
  }
  return { revokes, grants, removals, deletions };
}

const fmt = (n, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : '–');

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-bench-replicas-'));
  const pg = await startPostgres();
  const upstream = await stubUpstream();
  try {
    log('seeding the large store (10k users, 1k groups, 100k grants) in SQLite, then copying it into PostgreSQL');
    seedLargeStore(join(dir, 'large.db'), { username: 'bench-user', token: `fgt_bench_user_${randomBytes(16).toString('hex')}` });
    const sqlite = openSqliteStore(join(dir, 'large.db'));
    const large = await openStore({ dbPath: '', databaseUrl: await pg.createDatabase('large'), watchMs: 0 });
    await copyStore(sqlite, large.sql);
    const fromSqlite = await decisionMicrobench(sqlite);
    const fromPostgres = await decisionMicrobench(large.sql);
    await large.close();
    await sqlite.close();

    log('two replicas on one PostgreSQL store');
    const url = await pg.createDatabase('replicas');
    const [a, b] = await Promise.all([startReplica(url, upstream.url), startReplica(url, upstream.url)]);
    const { revokes, grants, removals, deletions } = await propagation(a.url, b.url);
    for (const r of [a, b]) r.child.kill('SIGTERM');

    console.log('\n(p) Replicas on PostgreSQL (PostgreSQL %s on loopback, fsync off; two flowgate processes)\n', 15);
    console.log('| decision (index + decide), µs | cold p50 | cold p99 | warm p50 | warm p99 | index load, ms |');
    console.log('|---|---|---|---|---|---|');
    for (const [name, m] of [['SQLite store', fromSqlite], ['PostgreSQL store', fromPostgres]])
      console.log(`| ${name} | ${fmt(m.cold.p50)} | ${fmt(m.cold.p99)} | ${fmt(m.warm.p50)} | ${fmt(m.warm.p99)} | ${fmt(m.indexLoadMs, 0)} |`);
    console.log(`\n| propagation to the other replica (${ROUNDS} rounds), ms | p50 | p99 | max |`);
    console.log('|---|---|---|---|');
    for (const [name, xs] of [['revoke (token refused)', revokes], ['grant removed (read refused)', removals], ['user deleted (token refused)', deletions], ['grant (read allowed)', grants]])
      console.log(`| ${name} | ${fmt(pct(xs, 0.5))} | ${fmt(pct(xs, 0.99))} | ${fmt(Math.max(...xs))} |`);
  } finally {
    upstream.server.close();
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
