// A non-admin's experiment search through two flowgate builds in front of one real MLflow with many
// experiments: how long a `max_results=10` page takes.
//   npm run build && node bench/search-pages.mjs <dist-A> <dist-B>
// Knobs: SEARCH_EXPERIMENTS (300), SEARCH_CALLS (200 per build, alternating).
import { execFileSync, fork, spawn } from 'node:child_process';
import { mkdtempSync, openSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const [distA, distB] = process.argv.slice(2).map((d) => resolve(d));
if (!distA || !distB) throw new Error('usage: node bench/search-pages.mjs <dist-A> <dist-B>');
const EXPERIMENTS = Number(process.env.SEARCH_EXPERIMENTS ?? 300);
const CALLS = Number(process.env.SEARCH_CALLS ?? 200);
const ADMIN = { username: 'admin', token: `fgt_search_admin_${'2'.repeat(32)}` };
const dir = mkdtempSync(join(tmpdir(), 'flowgate-search-pages-'));
const children = [];
process.on('exit', () => {
  for (const c of children) {
    try {
      c.ownGroup ? process.kill(-c.pid, 'SIGKILL') : c.kill('SIGKILL');
    } catch {}
  }
  rmSync(dir, { recursive: true, force: true });
});

const freePort = () =>
  new Promise((ok) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
const venv = execFileSync('bash', [join(HERE, '../scripts/mlflow-venv.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim().split('\n').pop();
const mlflowPort = await freePort();
const log = openSync(join(dir, 'mlflow.log'), 'w');
const mlflow = spawn(join(venv, 'bin/mlflow'), ['server', '--host', '127.0.0.1', '--port', String(mlflowPort), '--workers', '1', '--backend-store-uri', `sqlite:///${join(dir, 'mlflow.db')}`], {
  cwd: dir,
  env: { ...process.env, MLFLOW_DISABLE_TELEMETRY: 'true', PYTHONWARNINGS: 'ignore' },
  stdio: ['ignore', log, log],
  detached: true,
});
mlflow.ownGroup = true;
children.push(mlflow);
const mlflowUrl = `http://127.0.0.1:${mlflowPort}`;
for (let i = 0; ; i++) {
  if (i > 240) throw new Error('MLflow did not start');
  if (await fetch(`${mlflowUrl}/health`).then((r) => r.ok, () => false)) break;
  await new Promise((r) => setTimeout(r, 500));
}

const start = (dist, name) =>
  new Promise((ok, fail) => {
    const child = fork(join(HERE, 'flowgate.mjs'), [], {
      env: {
        ...process.env,
        BENCH_DIST: dist,
        FLOWGATE_HOST: '127.0.0.1',
        FLOWGATE_PORT: '0',
        FLOWGATE_METRICS_HOST: '127.0.0.1',
        FLOWGATE_METRICS_PORT: '0',
        FLOWGATE_DB_PATH: join(dir, `${name}.db`),
        FLOWGATE_UPSTREAM_URL: mlflowUrl,
        FLOWGATE_ADMIN_USERNAME: ADMIN.username,
        FLOWGATE_ADMIN_TOKEN: ADMIN.token,
        FLOWGATE_DEFAULT_PERMISSION: 'READ',
        FLOWGATE_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    children.push(child);
    child.once('message', (m) => ok(m.url));
    child.once('exit', (code) => fail(new Error(`flowgate exited (${code})`)));
  });
const basic = (u, t) => `Basic ${Buffer.from(`${u}:${t}`).toString('base64')}`;
const json = async (url, method, path, auth, body) => {
  const res = await fetch(url + path, { method, headers: { Authorization: auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${path} → ${res.status} ${await res.text()}`);
  return res.json();
};
for (let i = 0; i < EXPERIMENTS; i++) await json(mlflowUrl, 'POST', '/api/2.0/mlflow/experiments/create', '', { name: `search-${i}` });

const sides = [];
for (const [name, dist] of [['A', distA], ['B', distB]]) {
  const url = await start(dist, name);
  await json(url, 'POST', '/api/2.0/mlflow/users/create', basic(ADMIN.username, ADMIN.token), { username: 'reader' });
  const { token } = await json(url, 'PATCH', '/api/2.0/mlflow/permissions/users/access-token', basic(ADMIN.username, ADMIN.token), { username: 'reader' });
  sides.push({ name, dist, url, auth: basic('reader', token), ms: [] });
}
const page = (side) => json(side.url, 'POST', '/api/2.0/mlflow/experiments/search', side.auth, { max_results: 10 });
for (const side of sides) for (let i = 0; i < 20; i++) await page(side);
for (let i = 0; i < CALLS; i++)
  for (const side of i % 2 ? [...sides].reverse() : sides) {
    const t = process.hrtime.bigint();
    const answer = await page(side);
    side.ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (answer.experiments?.length !== 10 || !answer.next_page_token) throw new Error(`${side.name}: not a full page with a token`);
  }
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
for (const side of sides)
  console.log(`${side.name} (${side.dist}): ${EXPERIMENTS} experiments, max_results=10, ${CALLS} searches: p50 ${pct(side.ms, 50).toFixed(1)} ms, p99 ${pct(side.ms, 99).toFixed(1)} ms`);
process.exit(0);
