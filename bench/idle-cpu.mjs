// `node bench/idle-cpu.mjs`: how much of one core each server burns doing nothing, side by side in one
// window (a burst of load from elsewhere hits every row alike):
//   (b) a bare http-proxy-3 pass-through (bench/bare-proxy.mjs)
//   (c) flowgate as shipped (`node <package.json flowgate.nodeFlags> dist/cli.js serve`), default config: SQLite store
//   (p) the same flowgate on PostgreSQL (skipped, and said so, where no PostgreSQL server binaries are installed)
// Each server is warmed first (a few proxied requests, a refusal, an admin call), then left alone for
// IDLE_WARM_SECONDS so keep-alive connections and their timers wind down; then its CPU time is read from
// /proc/<pid>/stat (utime + stime, clock ticks) and, to the nanosecond, from every thread's
// /proc/<pid>/task/<tid>/schedstat, at the start and end of IDLE_SECONDS. Linux only.
//
// Knobs (environment): IDLE_SECONDS (60), IDLE_WARM_SECONDS (15), IDLE_ROUNDS (1: windows measured one
// after the other on the same servers), IDLE_DIST (the built flowgate to run, default dist/),
// IDLE_SKIP_POSTGRES=1.
import { execFileSync, fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresBinDir, startPostgres } from '../scripts/postgres-cluster.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const SECONDS = Number(process.env.IDLE_SECONDS ?? 60);
const WARM_SECONDS = Number(process.env.IDLE_WARM_SECONDS ?? 15);
const ROUNDS = Number(process.env.IDLE_ROUNDS ?? 1);
const DIST = resolve(ROOT, process.env.IDLE_DIST ?? 'dist');
const NODE_FLAGS = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).flowgate.nodeFlags;
const TICKS_PER_SECOND = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
const ADMIN = { username: 'admin', token: `fgt_idle_admin_${randomBytes(16).toString('hex')}` };
const DEVNULL = openSync('/dev/null', 'w');

const children = new Set();
const tmpDirs = [];
const log = (...a) => console.error('[idle-cpu]', ...a);
process.on('exit', () => {
  for (const c of children) {
    try {
      c.kill('SIGKILL');
    } catch {}
  }
  for (const d of tmpDirs) rmSync(d, { recursive: true, force: true });
});
process.on('SIGINT', () => process.exit(130));
process.on('SIGTERM', () => process.exit(143));

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function freePort() {
  return new Promise((resolvePort, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolvePort(port));
    });
  });
}

/** A bench script that sends its address over IPC once it listens. */
function forkChild(script, args = []) {
  const child = fork(join(HERE, script), args, { stdio: ['ignore', DEVNULL, 'inherit', 'ipc'] });
  children.add(child);
  return new Promise((resolveChild, reject) => {
    child.once('message', (msg) => resolveChild({ child, msg }));
    child.once('exit', (code) => reject(new Error(`${script} exited early (${code})`)));
  });
}

/** flowgate as an operator runs it: the CLI, the shipped Node flags, configured by FLOWGATE_* only. */
async function startFlowgate(extraEnv) {
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-idle-'));
  tmpDirs.push(dir);
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    FLOWGATE_HOST: '127.0.0.1',
    FLOWGATE_PORT: String(port),
    FLOWGATE_METRICS_HOST: '127.0.0.1',
    FLOWGATE_METRICS_PORT: String(await freePort()),
    FLOWGATE_DB_PATH: join(dir, 'flowgate.db'),
    FLOWGATE_ADMIN_USERNAME: ADMIN.username,
    FLOWGATE_ADMIN_TOKEN: ADMIN.token,
    ...extraEnv,
  };
  const child = spawn(process.execPath, [...NODE_FLAGS, join(DIST, 'cli.js'), 'serve'], { env, stdio: ['ignore', DEVNULL, 'inherit'] });
  children.add(child);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`flowgate exited early (${child.exitCode})`);
    const ready = await fetch(`${url}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { child, url };
    if (Date.now() > deadline) throw new Error('flowgate did not become ready in 30 s');
    await sleep(200);
  }
}

/** Some of everything a working server does, so lazy set-up and caches are behind it before it idles. */
async function warm(url, { flowgate }) {
  const auth = { Authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.token}`).toString('base64')}` };
  for (let i = 0; i < 50; i++) {
    await fetch(`${url}/api/2.0/mlflow/runs/get?run_id=run1x${i}`, { headers: auth }).then((r) => r.arrayBuffer());
    await fetch(`${url}/api/2.0/mlflow/experiments/search`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: '{}' }).then((r) =>
      r.arrayBuffer(),
    );
  }
  if (!flowgate) return;
  await fetch(`${url}/api/2.0/mlflow/runs/get?run_id=run1x1`).then((r) => r.arrayBuffer()); // 401
  const created = await fetch(`${url}/api/2.0/mlflow/users/create`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({ username: `idle-${randomBytes(4).toString('hex')}` }),
  });
  if (!created.ok) throw new Error(`admin call failed: ${created.status} ${await created.text()}`);
}

/** The process's CPU time: clock ticks from /proc/<pid>/stat and nanoseconds summed over its threads' schedstat. */
function cpuOf(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of stat)
  let ns = 0;
  let switches = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      for (const m of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)/gm)) switches += Number(m[1]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return { ticks, ns, switches, at: process.hrtime.bigint() };
}

const pct = (x) => (x < 0.01 ? x.toFixed(4) : x.toFixed(3));

async function main() {
  if (!existsSync('/proc/self/stat')) throw new Error('idle-cpu reads /proc: Linux only');
  if (!existsSync(join(DIST, 'cli.js'))) throw new Error(`no ${join(DIST, 'cli.js')}: npm run build first`);
  const upstream = await forkChild('upstream.mjs');
  const upstreamUrl = `http://127.0.0.1:${upstream.msg.port}`;
  const rows = [];
  const bare = await forkChild('bare-proxy.mjs', [upstreamUrl]);
  rows.push({ label: '(b) bare http-proxy-3', pid: bare.child.pid, url: `http://127.0.0.1:${bare.msg.port}`, flowgate: false });
  const sqlite = await startFlowgate({ FLOWGATE_UPSTREAM_URL: upstreamUrl });
  rows.push({ label: '(c) flowgate, default config (SQLite store)', pid: sqlite.child.pid, url: sqlite.url, flowgate: true });
  let postgres;
  if (process.env.IDLE_SKIP_POSTGRES === '1') log('IDLE_SKIP_POSTGRES=1: no PostgreSQL row');
  else if (!postgresBinDir()) log('no PostgreSQL server binaries (/usr/lib/postgresql/<major>/bin): no PostgreSQL row');
  else {
    postgres = await startPostgres();
    const onPg = await startFlowgate({ FLOWGATE_UPSTREAM_URL: upstreamUrl, FLOWGATE_DATABASE_URL: await postgres.createDatabase('idle') });
    rows.push({ label: '(p) flowgate on PostgreSQL', pid: onPg.child.pid, url: onPg.url, flowgate: true });
  }
  for (const row of rows) await warm(row.url, row);
  log(`warmed; leaving them alone for ${WARM_SECONDS} s, then measuring ${ROUNDS} × ${SECONDS} s (load average now ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  await sleep(WARM_SECONDS * 1000);

  const results = rows.map((r) => ({ label: r.label, rounds: [] }));
  for (let round = 0; round < ROUNDS; round++) {
    const before = rows.map((r) => cpuOf(r.pid));
    await sleep(SECONDS * 1000);
    const after = rows.map((r) => cpuOf(r.pid));
    rows.forEach((r, i) => {
      const wallS = Number(after[i].at - before[i].at) / 1e9;
      results[i].rounds.push({
        statPct: (100 * (after[i].ticks - before[i].ticks)) / TICKS_PER_SECOND / wallS,
        schedPct: (100 * (after[i].ns - before[i].ns)) / 1e9 / wallS,
        wakeupsPerS: (after[i].switches - before[i].switches) / wallS,
      });
    });
    log(`round ${round + 1}/${ROUNDS} done (load average ${loadavg().map((l) => l.toFixed(2)).join(' ')})`);
  }
  console.log(`Idle CPU, % of one core, over ${ROUNDS} × ${SECONDS} s after ${WARM_SECONDS} s of quiet (Node ${process.version}, flowgate from ${DIST}):`);
  console.log('| server | CPU (schedstat, ns) | CPU (/proc stat, ticks) | context switches/s |');
  console.log('|---|---|---|---|');
  for (const r of results) {
    const col = (k, f) => r.rounds.map((x) => f(x[k])).join(' / ');
    console.log(`| ${r.label} | ${col('schedPct', pct)} % | ${col('statPct', pct)} % | ${col('wakeupsPerS', (v) => v.toFixed(1))} |`);
  }
  for (const c of children) c.kill('SIGTERM');
  await postgres?.stop();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
