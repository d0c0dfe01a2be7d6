import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, mlflowVenv } from '../helpers/mlflow-server.js';
import { runOps } from '../helpers/python-ops.js';

/** The README's first command, for real: MLflow and flowgate start, and the printed exports work. */
describe('npm run quickstart', () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child?.pid) process.kill(-child.pid, 'SIGTERM');
  });

  it('starts MLflow behind flowgate and prints working MLFLOW_TRACKING_* exports', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fg-quickstart-'));
    const [port, mlflowPort, metricsPort] = [await freePort(), await freePort(), await freePort()];
    child = spawn('bash', ['scripts/quickstart.sh'], {
      detached: true,
      env: {
        ...process.env,
        QUICKSTART_DIR: dir,
        QUICKSTART_PORT: String(port),
        QUICKSTART_MLFLOW_PORT: String(mlflowPort),
        QUICKSTART_METRICS_PORT: String(metricsPort),
        QUICKSTART_SKIP_BUILD: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', () => undefined);
    const deadline = Date.now() + 240_000;
    while (!/Press Ctrl-C to stop/.test(out)) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`quickstart did not come up:\n${out}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const exports = Object.fromEntries([...out.matchAll(/^export (MLFLOW_TRACKING_[A-Z]+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
    expect(exports.MLFLOW_TRACKING_URI).toBe(`http://127.0.0.1:${port}/`);
    expect(exports.MLFLOW_TRACKING_USERNAME).toBe('admin');
    expect(exports.MLFLOW_TRACKING_PASSWORD).toMatch(/^fgt_/);
    const r = await runOps(await mlflowVenv(), exports.MLFLOW_TRACKING_URI!, 'admin', exports.MLFLOW_TRACKING_PASSWORD!, [
      ['create', 'create_experiment', 'quickstart-check'],
    ]);
    expect(r.create?.ok).toBe(true);
    const wrong = await runOps(await mlflowVenv(), exports.MLFLOW_TRACKING_URI!, 'admin', 'not-the-token', [['get', 'get_experiment', '0']]);
    expect(wrong.get).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
    const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`).then((res) => res.text());
    expect(metrics).toContain('flowgate_build_info');
  });
});
