// The Permissions UI at scale: every screen's first page (the admin API call it makes), with 10k users,
// 1k groups and 100k grants in the store, timed over repeated calls against flowgate built in dist/.
// Target: each first page under 300 ms at p99. Run by `npm run bench` after the proxy bench.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../dist/config.js';
import { createLogger } from '../dist/logging.js';
import { startFlowgate } from '../dist/main.js';
import { seedScale } from './seed-scale.mjs';

const ROUNDS = Number(process.env.BENCH_UI_ROUNDS ?? 30);
const TARGET_MS = 300;
const ADMIN = { username: 'admin', token: 'bench-admin-token-0123456789abcdef0123456789' };
const auth = `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.token}`).toString('base64')}`;

const upstream = createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
});
await new Promise((resolve) => upstream.listen(0, '127.0.0.1', resolve));
const dir = mkdtempSync(join(tmpdir(), 'flowgate-ui-bench-'));
const config = loadConfig({
  FLOWGATE_HOST: '127.0.0.1',
  FLOWGATE_PORT: '0',
  FLOWGATE_METRICS_PORT: '0',
  FLOWGATE_METRICS_HOST: '127.0.0.1',
  FLOWGATE_DB_PATH: join(dir, 'flowgate.db'),
  FLOWGATE_UPSTREAM_URL: `http://127.0.0.1:${upstream.address().port}`,
  FLOWGATE_ADMIN_USERNAME: ADMIN.username,
  FLOWGATE_ADMIN_TOKEN: ADMIN.token,
  FLOWGATE_LOG_LEVEL: 'error',
});
const fg = await startFlowgate(config, { logger: createLogger('error') });

const seeded = performance.now();
await seedScale(fg.store.sql);
console.log(`seeded 10k users, 1k groups, 100k grants in ${((performance.now() - seeded) / 1000).toFixed(1)} s`);

const SCREENS = [
  ['Users (search)', 'permissions/ui/users?q=user-99'],
  ['Service accounts', 'permissions/ui/users?type=service_account'],
  ['Groups (search)', 'permissions/ui/groups?q=group-5'],
  ['Experiment grants', 'permissions/ui/experiments/1000/grants'],
  ['Experiment grants (search)', 'permissions/ui/experiments/1000/grants?q=user-7'],
  ['Effective permissions', 'permissions/ui/experiments/1000/effective'],
  ['Audit log (filtered)', 'permissions/ui/audit?action=grant.'],
  ['My permissions', 'permissions/ui/my-permissions/experiments?id=1000&id=1001&id=1002'],
];

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
const rows = [];
for (const [screen, path] of SCREENS) {
  const times = [];
  for (let i = 0; i < ROUNDS; i++) {
    const started = performance.now();
    const res = await fetch(`${fg.url}/api/2.0/mlflow/${path}`, { headers: { authorization: auth } });
    await res.arrayBuffer();
    times.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`${path}: HTTP ${res.status}`);
  }
  times.sort((a, b) => a - b);
  rows.push({ screen, p50: quantile(times, 0.5), p99: quantile(times, 0.99), first: times[0] });
}

console.log(`\n## The Permissions UI at scale (10k users, 1k groups, 100k grants; ${ROUNDS} calls each)\n`);
console.log('| screen (first page) | p50 ms | p99 ms | target |');
console.log('|---|---:|---:|---|');
for (const r of rows) console.log(`| ${r.screen} | ${r.p50.toFixed(1)} | ${r.p99.toFixed(1)} | ${r.p99 < TARGET_MS ? 'met' : '**missed**'} (< ${TARGET_MS} ms) |`);

await fg.close();
upstream.close();
rmSync(dir, { recursive: true, force: true });
process.exitCode = rows.every((r) => r.p99 < TARGET_MS) ? 0 : 1;
