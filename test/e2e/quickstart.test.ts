import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, jobQueueDirsOf, mlflowVenv } from '../helpers/mlflow-server.js';
import { runOps } from '../helpers/python-ops.js';

interface Ports {
  readonly port: number;
  readonly mlflowPort: number;
  readonly metricsPort: number;
}

function quickstart(dir: string, p: Ports): ChildProcess {
  return spawn('bash', ['scripts/quickstart.sh'], {
    detached: true,
    env: {
      ...process.env,
      QUICKSTART_DIR: dir,
      QUICKSTART_PORT: String(p.port),
      QUICKSTART_MLFLOW_PORT: String(p.mlflowPort),
      QUICKSTART_METRICS_PORT: String(p.metricsPort),
      QUICKSTART_SKIP_BUILD: '1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** A quickstart expected to give up: its exit code and what it said, or a failure if it is still running after `ms`. */
async function refusedQuickstart(dir: string, p: Ports, ms = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = quickstart(dir, p);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const timer = setTimeout(() => process.kill(-child.pid!, 'SIGTERM'), ms);
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** Every file the running quickstart keeps in its directory, with its content now. */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const name of readdirSync(dir)) if (name.endsWith('.log') || name === 'quickstart.pid' || name === 'admin-token') files.set(name, readFileSync(join(dir, name), 'utf8'));
  return files;
}

/** The README's first command, for real: MLflow and flowgate start, and the printed exports work. */
describe('npm run quickstart', () => {
  let child: ChildProcess | undefined;
  let dir: string;
  let ports: Ports;
  let out = '';
  afterAll(() => {
    if (child?.pid) process.kill(-child.pid, 'SIGTERM');
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fg-quickstart-'));
    // A port found free may be taken by another test file's server before quickstart binds it: quickstart
    // then refuses at once, naming it (the behaviour tested below), and the test asks for new ports.
    for (let attempt = 1; ; attempt++) {
      ports = { port: await freePort(), mlflowPort: await freePort(), metricsPort: await freePort() };
      if (new Set(Object.values(ports)).size < 3) continue;
      out = '';
      let err = '';
      child = quickstart(dir, ports);
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      const deadline = Date.now() + 240_000;
      while (!/Press Ctrl-C to stop/.test(out) && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
      if (/Press Ctrl-C to stop/.test(out)) return;
      if (attempt < 3 && child.exitCode !== null && /is in use/.test(err)) continue;
      throw new Error(`quickstart did not come up:\n${out}\n${err.slice(-3000)}`);
    }
  }, 600_000);

  const exported = () => Object.fromEntries([...out.matchAll(/^export (MLFLOW_TRACKING_[A-Z]+)=(.*)$/gm)].map((m) => [m[1], m[2]]));

  it('starts MLflow behind flowgate and prints working MLFLOW_TRACKING_* exports', async () => {
    const exports = exported();
    expect(exports.MLFLOW_TRACKING_URI).toBe(`http://127.0.0.1:${ports.port}/`);
    expect(exports.MLFLOW_TRACKING_USERNAME).toBe('admin');
    expect(exports.MLFLOW_TRACKING_PASSWORD).toMatch(/^fgt_/);
    const r = await runOps(await mlflowVenv(), exports.MLFLOW_TRACKING_URI!, 'admin', exports.MLFLOW_TRACKING_PASSWORD!, [
      ['create', 'create_experiment', 'quickstart-check'],
    ]);
    expect(r.create?.ok).toBe(true);
    const wrong = await runOps(await mlflowVenv(), exports.MLFLOW_TRACKING_URI!, 'admin', 'not-the-token', [['get', 'get_experiment', '0']]);
    expect(wrong.get).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
    const metrics = await fetch(`http://127.0.0.1:${ports.metricsPort}/metrics`).then((res) => res.text());
    expect(metrics).toContain('flowgate_build_info');
  });

  /** The first quickstart is untouched: its files kept what they had, and it answers its admin. */
  async function expectFirstUntouched(before: Map<string, string>): Promise<void> {
    const after = snapshot(dir);
    expect([...before.keys()]).toEqual(expect.arrayContaining(['mlflow.log', 'flowgate.log', 'quickstart.pid']));
    expect(before.get('mlflow.log')!.length).toBeGreaterThan(0);
    expect(before.get('flowgate.log')!.length).toBeGreaterThan(0);
    // Logs may have grown from the first instance's own work, never lost a byte.
    for (const [name, content] of before) expect(after.get(name)!.startsWith(content), name).toBe(true);
    expect(after.get('quickstart.pid')).toBe(before.get('quickstart.pid'));
    const { MLFLOW_TRACKING_PASSWORD: token } = exported();
    const answer = await fetch(`http://127.0.0.1:${ports.port}/api/2.0/mlflow/experiments/search?max_results=10`, {
      headers: { Authorization: `Basic ${Buffer.from(`admin:${token}`).toString('base64')}` },
    });
    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { experiments: { name: string }[] }).experiments.map((e) => e.name)).toContain('quickstart-check');
    expect((await fetch(`http://127.0.0.1:${ports.port}/readyz`)).status).toBe(200);
  }

  it('a second quickstart on the same ports fails at once naming each port in use, and prints no banner', async () => {
    const before = snapshot(dir);
    const started = Date.now();
    const second = await refusedQuickstart(dir, ports);
    expect(second.code, second.stderr).not.toBe(0);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(second.stderr).toContain(`port ${ports.mlflowPort} is in use: MLflow cannot listen on it (choose another with QUICKSTART_MLFLOW_PORT=...)`);
    expect(second.stderr).toContain(`port ${ports.port} is in use: flowgate cannot listen on it (choose another with QUICKSTART_PORT=...)`);
    expect(second.stderr).toContain(`port ${ports.metricsPort} is in use: flowgate's metrics cannot listen on it`);
    expect(second.stderr).toContain('nothing was started');
    expect(second.stderr).not.toContain('[1/5]');
    expect(second.stdout).not.toMatch(/flowgate is running|Press Ctrl-C|export MLFLOW_TRACKING/);
    await expectFirstUntouched(before);
  });

  it('a second quickstart in the same directory on free ports is refused by the directory lock', async () => {
    const before = snapshot(dir);
    const other: Ports = { port: await freePort(), mlflowPort: await freePort(), metricsPort: await freePort() };
    const second = await refusedQuickstart(dir, other);
    expect(second.code, second.stderr).not.toBe(0);
    expect(second.stderr).toContain(`another quickstart (pid ${before.get('quickstart.pid')!.trim()}) is running with QUICKSTART_DIR=${dir}`);
    expect(second.stderr).not.toContain('[1/5]');
    expect(second.stdout).not.toMatch(/flowgate is running|Press Ctrl-C/);
    await expectFirstUntouched(before);
    // Nothing of the second one listens.
    expect(await fetch(`http://127.0.0.1:${other.port}/healthz`).then(() => 'answered', () => 'refused')).toBe('refused');
  });

  it('Ctrl-C stops MLflow and flowgate and removes the job queue MLflow made in /dev/shm', async () => {
    const running = child!;
    const queues = await jobQueueDirsOf(running.pid!);
    expect(queues).toHaveLength(1);
    expect(existsSync(queues[0]!)).toBe(true);
    const closed = new Promise((resolve) => running.on('close', resolve));
    process.kill(-running.pid!, 'SIGINT'); // what a terminal sends the whole foreground group
    await closed;
    child = undefined;
    expect(queues.filter((queue) => existsSync(queue))).toEqual([]);
    const answers = (url: string) => fetch(url).then(() => 'answered', () => 'refused');
    expect(await answers(`http://127.0.0.1:${ports.port}/healthz`)).toBe('refused');
    expect(await answers(`http://127.0.0.1:${ports.mlflowPort}/health`)).toBe('refused');
    expect(existsSync(join(dir, 'quickstart.pid'))).toBe(false);
  }, 60_000);
});
