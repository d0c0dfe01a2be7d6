import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Children that must not outlive the test process, even when afterAll never runs. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) killGroup(child);
});

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL'); // detached: the server and its gunicorn/uvicorn workers
  } catch {
    child.kill('SIGKILL');
  }
}

export async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

export async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

// ---------------------------------------------------------------------------------------------
// The pinned MLflow venv
// ---------------------------------------------------------------------------------------------

/**
 * The venv scripts/mlflow-venv.sh manages. The script wipes and reinstalls a venv that lacks its
 * `.complete` marker, so while another process is installing we wait for the marker instead.
 */
export async function mlflowVenv(timeoutMs = 15 * 60_000): Promise<string> {
  const version = process.env.FLOWGATE_MLFLOW_VERSION ?? '3.17.2';
  const venv =
    process.env.FLOWGATE_MLFLOW_VENV ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'flowgate', `mlflow-${version}`);
  const deadline = Date.now() + timeoutMs;
  if (existsSync(venv)) {
    while (!existsSync(join(venv, '.complete'))) {
      if (Date.now() > deadline) throw new Error(`MLflow venv ${venv} still installing after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  const { stdout } = await run('bash', ['scripts/mlflow-venv.sh'], { maxBuffer: 1 << 20, timeout: timeoutMs });
  return stdout.trim().split('\n').pop()!;
}

const TRAIN_SCRIPT = `
import sys, mlflow, mlflow.sklearn
import numpy as np
from sklearn.linear_model import LogisticRegression
name = sys.argv[1]
X = np.array([[0.0, 0.0], [0.1, 0.2], [0.9, 1.0], [1.0, 0.8]])
y = [0, 0, 1, 1]
model = LogisticRegression().fit(X, y)
mlflow.set_experiment("flowgate-inference-e2e")
with mlflow.start_run():
    mlflow.sklearn.log_model(model, name="model", registered_model_name=name, input_example=X[:1])
print("registered", name)
`;

/** Trains a two-feature classifier and registers it as `<name>` version 1 in a sqlite store under `dir`. */
export async function trainAndRegister(venv: string, dir: string, name: string): Promise<Record<string, string>> {
  const env = mlflowEnv(venv, dir);
  writeFileSync(join(dir, 'train.py'), TRAIN_SCRIPT);
  await run(join(venv, 'bin', 'python'), [join(dir, 'train.py'), name], { cwd: dir, env, timeout: 240_000, maxBuffer: 16 << 20 });
  return env;
}

/** The venv's bin first on PATH: `mlflow models serve` execs `uvicorn` by name. */
function mlflowEnv(venv: string, dir: string): Record<string, string> {
  return {
    ...(process.env as Record<string, string>),
    PATH: `${join(venv, 'bin')}:${process.env.PATH ?? ''}`,
    MLFLOW_TRACKING_URI: `sqlite:///${join(dir, 'mlflow.db')}`,
    MLFLOW_DISABLE_TELEMETRY: 'true',
    DO_NOT_TRACK: 'true',
    PYTHONUNBUFFERED: '1',
  };
}

export interface RunningModelServer {
  readonly url: string;
  readonly output: () => string;
  stop(): Promise<void>;
}

/** `mlflow models serve` for `models:/<name>/1`, bound to 127.0.0.1, resolved once /ping answers 200. */
export async function serveModel(venv: string, dir: string, name: string, timeoutMs = 240_000): Promise<RunningModelServer> {
  const port = await freePort();
  const child = spawn(
    join(venv, 'bin', 'mlflow'),
    ['models', 'serve', '-m', `models:/${name}/1`, '--env-manager', 'local', '--host', '127.0.0.1', '--port', String(port), '--workers', '1'],
    { cwd: dir, env: mlflowEnv(venv, dir), detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.add(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    killGroup(child);
    children.delete(child);
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`mlflow models serve exited with ${child.exitCode}:\n${output}`);
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`mlflow models serve not ready after ${timeoutMs} ms:\n${output}`);
    }
    try {
      const res = await fetch(`${url}/ping`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  return { url, output: () => output, stop };
}

// ---------------------------------------------------------------------------------------------
// Counting pass-through: proves which requests reached the model server
// ---------------------------------------------------------------------------------------------

export interface CountingProxy {
  readonly url: string;
  /** Method, path and x-api-key presence of every request that reached the model server. */
  readonly seen: Array<{ method: string; path: string; hadApiKey: boolean }>;
  close(): Promise<void>;
}

export async function countingProxy(target: string): Promise<CountingProxy> {
  const seen: CountingProxy['seen'] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', path: req.url ?? '', hadApiKey: req.headers['x-api-key'] !== undefined });
    const upstream = http.request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => {
      res.statusCode = 502;
      res.end();
    });
    req.pipe(upstream);
  });
  const url = await listen(server);
  return { url, seen, close: () => closeServer(server) };
}

// ---------------------------------------------------------------------------------------------
// A scriptable fake model server for unit tests
// ---------------------------------------------------------------------------------------------

export interface FakeModelServer {
  readonly url: string;
  readonly requests: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }>;
  /** Replace the default answer (200 JSON echo of method, url and body size). */
  handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  close(): Promise<void>;
}

export async function fakeModelServer(): Promise<FakeModelServer> {
  const fake: FakeModelServer = {
    url: '',
    requests: [],
    handler: undefined,
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    fake.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    if (fake.handler) return fake.handler(req, res);
    let size = 0;
    req.on('data', (c: Buffer) => (size += c.length));
    req.on('end', () => {
      res.setHeader('Content-Type', 'application/json');
      res.end(JSON.stringify({ method: req.method, url: req.url, bodyBytes: size }));
    });
  });
  const url = await listen(server);
  return Object.assign(fake, { url, close: () => closeServer(server) });
}
