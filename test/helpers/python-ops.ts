import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pythonEnv } from './mlflow-server.js';

const OPS_SCRIPT = fileURLToPath(new URL('../e2e/py/ops.py', import.meta.url));

export type Op = [label: string, op: string, ...args: unknown[]];
export type Outcome = { ok: true; value: unknown } | { ok: false; error: string };

/** Runs operations with the real MLflow Python client as `username`/`token` against `trackingUri`. */
export function runOps(venv: string, trackingUri: string, username: string, token: string, ops: Op[]): Promise<Record<string, Outcome>> {
  return new Promise((resolve, reject) => {
    const child = spawn(join(venv, 'bin/python'), [OPS_SCRIPT], {
      env: pythonEnv(venv, {
        MLFLOW_TRACKING_URI: trackingUri,
        MLFLOW_TRACKING_USERNAME: username,
        MLFLOW_TRACKING_PASSWORD: token,
        MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0',
        MLFLOW_HTTP_REQUEST_TIMEOUT: '60',
        MLFLOW_ENABLE_ASYNC_TRACE_LOGGING: 'false',
      }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('@@RESULT@@'));
      if (!line) return reject(new Error(`python ops failed (exit ${code}):\n${err.slice(-4000)}`));
      resolve(JSON.parse(line.slice('@@RESULT@@'.length)) as Record<string, Outcome>);
    });
    child.stdin.end(JSON.stringify(ops));
  });
}

