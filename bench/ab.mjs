// Two flowgate builds side by side, for one change's A/B: both on one pinned core (the last), the
// upstream and the load client on the others, the bench's request mix at a fixed rate, rounds
// alternating A, B, B, A, … so the VM's drift falls on both alike. Prints per round and the medians:
// CPU per request, p99, and full (old-generation) collections per round.
//
//   node bench/ab.mjs <dist-A> <dist-B>      e.g. a `git archive` of the commit before, built, vs dist/
// Knobs: AB_RATE (req/s, 7121), AB_ROUNDS (8), AB_USER=admin (the admin token instead of a user with grants),
// AB_NODE_A / AB_NODE_B (another node binary for that side, whose better-sqlite3 must be built for it),
// AB_FLAGS_A / AB_FLAGS_B (Node flags added after the shipped ones, for a flag's A/B on one build), AB_ONLY (below),
// AB_STORE=large ((d)'s store of 100k grants, seeded by the current dist/, where the user's way in is a group grant).
import { execFileSync, fork } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const [distA, distB] = process.argv.slice(2).map((d) => resolve(d));
if (!distA || !distB) throw new Error('usage: node bench/ab.mjs <dist-A> <dist-B>');
const RATE = Number(process.env.AB_RATE ?? 7121);
const ROUNDS = Number(process.env.AB_ROUNDS ?? 8);
const NODE_FLAGS = JSON.parse(readFileSync(join(HERE, '../package.json'), 'utf8')).flowgate.nodeFlags;
const SERVER_CORE = String(cpus().length - 1);
const OTHER_CORES = cpus().length > 2 ? `0-${cpus().length - 2}` : '0';
const DEVNULL = openSync('/dev/null', 'w');
const USER = { username: 'ab-user', token: `fgt_ab_user_${'0'.repeat(32)}` };
const ADMIN = { username: 'admin', token: `fgt_ab_admin_${'1'.repeat(32)}` };
const children = [];
const dirs = [];
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const start = (script, env = {}, execArgv = [], execPath = process.execPath) => {
  const child = fork(join(HERE, script), [], { env: { ...process.env, ...env }, execArgv, execPath, stdio: ['ignore', DEVNULL, 'inherit', 'ipc'] });
  children.push(child);
  return new Promise((ok, fail) => {
    child.once('message', (msg) => ok({ child, msg }));
    child.once('exit', (code) => fail(new Error(`${script} exited (${code})`)));
  });
};
const ask = (child) => new Promise((ok) => (child.once('message', ok), child.send('stats')));
const pin = (pid, list) => execFileSync('taskset', ['-a', '-pc', list, String(pid)], { stdio: 'ignore' });

/** (c)'s store, made by the build that will open it (its schema): one user with EDIT on the mix's ten experiments. */
async function seed(dist) {
  if (process.env.AB_STORE === 'large') return seedLarge();
  const { openDatabase } = await import(`${dist}/store/database.js`);
  const { hashToken } = await import(`${dist}/tokens/token.js`);
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-ab-'));
  dirs.push(dir);
  const db = openDatabase(join(dir, 'flowgate.db'));
  const now = Date.now();
  db.transaction(() => {
    const { lastInsertRowid: id } = db.prepare('INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES (?, ?, 0, 0, ?)').run(USER.username, 'A/B', now);
    db.prepare('INSERT INTO access_tokens (user_id, token_hash, created_at, expires_at) VALUES (?, ?, ?, ?)').run(id, hashToken(USER.token), now, now + 86_400_000);
    const grant = db.prepare("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('experiment', ?, ?, 'EDIT', ?, ?)");
    for (let e = 1; e <= 10; e++) grant.run(String(e), id, now, now);
  })();
  db.close();
  return dir;
}

async function seedLarge() {
  const { seedLargeStore } = await import('./large-store.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-ab-'));
  dirs.push(dir);
  seedLargeStore(join(dir, 'flowgate.db'), USER);
  return dir;
}

const upstream = await start('upstream.mjs');
const env = (dir, dist) => ({
  BENCH_DIST: dist,
  FLOWGATE_HOST: '127.0.0.1',
  FLOWGATE_PORT: '0',
  FLOWGATE_METRICS_HOST: '127.0.0.1',
  FLOWGATE_METRICS_PORT: '0',
  FLOWGATE_DB_PATH: join(dir, 'flowgate.db'),
  FLOWGATE_UPSTREAM_URL: `http://127.0.0.1:${upstream.msg.port}`,
  FLOWGATE_ADMIN_USERNAME: ADMIN.username,
  FLOWGATE_ADMIN_TOKEN: ADMIN.token,
  FLOWGATE_LOG_LEVEL: 'info',
});
const extraFlags = (key) => (process.env[`AB_FLAGS_${key}`] ?? '').split(' ').filter(Boolean);
const sides = {
  A: await start('flowgate.mjs', env(await seed(distA), distA), [...NODE_FLAGS, ...extraFlags('A')], process.env.AB_NODE_A || process.execPath),
  B: await start('flowgate.mjs', env(await seed(distB), distB), [...NODE_FLAGS, ...extraFlags('B')], process.env.AB_NODE_B || process.execPath),
};
const who = process.env.AB_USER === 'admin' ? ADMIN : USER;
const auth = { Authorization: `Basic ${Buffer.from(`${who.username}:${who.token}`).toString('base64')}` };
const json = { ...auth, 'Content-Type': 'application/json' };
const mix = Array.from({ length: 100 }, (_, i) => [String((i % 10) + 1), `run${(i % 10) + 1}x${i}`]).flatMap(([e, run]) => [
  { method: 'GET', path: `/api/2.0/mlflow/runs/get?run_id=${run}`, headers: auth },
  { method: 'POST', path: '/api/2.0/mlflow/runs/log-metric', headers: json, body: JSON.stringify({ run_id: run, key: 'loss', value: 0.25, timestamp: 1_700_000_000_000, step: 1 }) },
  { method: 'POST', path: '/api/2.0/mlflow/experiments/search', headers: json, body: JSON.stringify({ max_results: 10 }) },
  { method: 'GET', path: `/api/2.0/mlflow-artifacts/artifacts/${e}/${run}/artifacts/model.txt`, headers: auth },
]);
// AB_ONLY=N (0-3): one request of the mix alone (get run, log metric, search, artifact), to see which one a difference comes from.
const only = process.env.AB_ONLY === undefined ? mix : mix.filter((_, i) => i % 4 === Number(process.env.AB_ONLY));
const client = fork(join(HERE, 'load.mjs'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
children.push(client);
pin(upstream.child.pid, OTHER_CORES);
pin(client.pid, OTHER_CORES);

/** One load run against a side; the server's CPU and collections over its measured part. */
function drive(side, opts) {
  let before;
  return new Promise((ok) => {
    const onMessage = async (m) => {
      if (m.warm) {
        before = await ask(side.child);
        client.send('go');
        return;
      }
      client.off('message', onMessage);
      const after = await ask(side.child);
      const r = m.result;
      const collections = after.gc.fullCollections - before.gc.fullCollections;
      ok({ ...r, cpuUs: (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / r.count, fullCollections: collections, maxRss: after.maxRss });
    };
    client.on('message', onMessage);
    client.send({ base: side.msg.url, mix: only, ...opts, onWarm: true });
  });
}

for (const side of Object.values(sides)) await drive(side, { concurrency: 32, durationMs: 10_000, maxRequests: 2_000_000, warmupMs: 500 });
for (const side of Object.values(sides)) pin(side.child.pid, SERVER_CORE);
const runs = { A: [], B: [] };
for (let round = 0; round < ROUNDS; round++)
  for (const key of round % 2 ? ['B', 'A'] : ['A', 'B']) {
    const r = await drive(sides[key], { concurrency: 128, durationMs: 2000, maxRequests: RATE * 2, rate: RATE, warmupMs: 300 });
    runs[key].push(r);
    console.log(`${key} round ${round + 1}: p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms, ${r.cpuUs.toFixed(1)} µs CPU/req, ${r.fullCollections} full collections, ${r.rps.toFixed(0)} req/s`);
  }
const median = (xs) => {
  const v = [...xs].sort((x, y) => x - y);
  return (v[(v.length - 1) >> 1] + v[v.length >> 1]) / 2;
};
for (const key of ['A', 'B']) {
  const r = runs[key];
  console.log(
    `${key} (${key === 'A' ? distA : distB}): median p99 ${median(r.map((x) => x.p99)).toFixed(2)} ms, CPU ${median(r.map((x) => x.cpuUs)).toFixed(1)} µs/req; ` +
      `full collections ${r.reduce((n, x) => n + x.fullCollections, 0)} in ${r.length} rounds; peak RSS ${(r.at(-1).maxRss / 1e6).toFixed(0)} MB`,
  );
}
process.exit(0);
