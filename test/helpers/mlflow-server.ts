import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { superviseGroup } from './process-group.js';

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

export interface MlflowServer {
  /** Base URL including the static prefix, without a trailing slash. */
  readonly url: string;
  readonly port: number;
  readonly venv: string;
  readonly artifactsDir: string;
  /** Log lines MLflow wrote so far (stdout and stderr), for failure messages. */
  logs(): string;
  /**
   * With `stackDumps`: every thread's stack in every Python process of the server (Python's faulthandler
   * on SIGUSR1; they go on running), each process headed by its command line. Without it: ''.
   */
  dumpStacks(): Promise<string>;
  /** The job queue directories MLflow made for this server (with job execution on); stop() removes them. */
  jobQueueDirs(): Promise<string[]>;
  stop(): Promise<void>;
}

/**
 * With job execution on, `mlflow server` puts its job queue in a directory it makes in /dev/shm (else the
 * temp dir) and never removes. Its processes carry the path in their environment.
 */
const JOB_QUEUE_VARIABLE = '_MLFLOW_HUEY_STORAGE_PATH=';
export async function jobQueueDirsOf(processGroup: number): Promise<string[]> {
  const dirs = new Set<string>();
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name));
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
    // Fields after the command name (which may hold spaces and parentheses): state, parent, group.
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]) !== processGroup) continue;
    const environ = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    for (const entry of environ.split('\0')) {
      if (!entry.startsWith(JOB_QUEUE_VARIABLE)) continue;
      const dir = resolve(entry.slice(JOB_QUEUE_VARIABLE.length));
      // Only what MLflow's mkdtemp makes: a tmp* directory straight under /dev/shm or the temp dir.
      if ((dirname(dir) === '/dev/shm' || dirname(dir) === tmpdir()) && basename(dir).startsWith('tmp')) dirs.add(dir);
    }
  }
  return [...dirs];
}

/**
 * The venv holding the pinned MLflow (or `version`'s, else FLOWGATE_MLFLOW_VERSION's); installs it on
 * first use (minutes), reuses it after.
 */
export function mlflowVenv(version?: string): Promise<string> {
  const env = version === undefined ? process.env : { ...process.env, FLOWGATE_MLFLOW_VERSION: version };
  return new Promise((resolvePath, reject) => {
    execFile('bash', [join(REPO_ROOT, 'scripts/mlflow-venv.sh')], { env, maxBuffer: 1 << 20, timeout: 900_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`scripts/mlflow-venv.sh failed: ${error.message}\n${stderr}`));
      else resolvePath(stdout.trim().split('\n').pop() ?? '');
    });
  });
}

/**
 * What MLflow's `auth` extra adds to the pinned venv (Flask-WTF, WTForms), installed once beside it
 * (`<venv>-bench-auth-extras`, as the bench keeps it) for `PYTHONPATH`: MLflow's basic-auth app and its
 * `mlflow.server.auth` package need them. Made in a directory of its own, then moved into place, so two
 * test files asking at once never share a half-installed one.
 */
export async function mlflowAuthExtras(venv: string): Promise<string> {
  const dir = `${venv}-bench-auth-extras`;
  if (existsSync(join(dir, 'flask_wtf'))) return dir;
  const scratch = `${dir}.${process.pid}.${Date.now()}`;
  const pip = await runPython(
    venv,
    `import subprocess, sys; subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps", "--target", ${JSON.stringify(scratch)}, "Flask-WTF<2", "WTForms<4"])`,
    {},
    600_000,
  );
  if (pip.code !== 0) throw new Error(`installing MLflow's auth extra failed:\n${pip.stderr}`);
  try {
    await rename(scratch, dir);
  } catch (e) {
    // Another test file moved its copy into place first.
    if (!existsSync(join(dir, 'flask_wtf'))) throw e;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return dir;
}

/** The release a running MLflow reports at `GET /version` (under its static prefix; at its root before 3.1). */
export async function runningMlflowVersion(server: Pick<MlflowServer, 'url' | 'port'>): Promise<string> {
  for (const base of [server.url, `http://127.0.0.1:${server.port}`]) {
    const response = await fetch(`${base}/version`, { signal: AbortSignal.timeout(10_000) });
    if (response.ok) return (await response.text()).trim();
  }
  throw new Error(`GET ${server.url}/version: MLflow did not tell its version`);
}

/** Environment for running the venv's python and `mlflow` CLI, without leaking the caller's MLflow settings. */
export function pythonEnv(venv: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('MLFLOW_') && !key.startsWith('_MLFLOW_') && key !== 'PYTHONPATH' && key !== 'PYTHONHOME') {
      env[key] = value;
    }
  }
  return {
    ...env,
    VIRTUAL_ENV: venv,
    PATH: `${join(venv, 'bin')}:${process.env.PATH ?? ''}`,
    PYTHONUNBUFFERED: '1',
    PYTHONWARNINGS: 'ignore',
    // No usage telemetry from test runs.
    MLFLOW_DISABLE_TELEMETRY: 'true',
    DO_NOT_TRACK: 'true',
    ...extra,
  };
}

export interface PythonResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a Python snippet with the venv's interpreter (e.g. the real MLflow client). Never rejects on a non-zero exit. */
export function runPython(venv: string, code: string, env: Record<string, string> = {}, timeoutMs = 120_000): Promise<PythonResult> {
  return new Promise((resolveResult, reject) => {
    const child = spawn(join(venv, 'bin/python'), ['-c', code], { env: pythonEnv(venv, env), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolveResult({ code, stdout, stderr });
    });
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolvePort(port));
    });
  });
}

async function waitForHealth(url: string, child: ChildProcess, logs: () => string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`mlflow server exited early (${child.exitCode ?? child.signalCode}):\n${logs()}`);
    }
    try {
      // MLflow 3.0 serves /health at its root even with a static prefix.
      for (const health of [`${url}/health`, `${new URL(url).origin}/health`]) {
        const response = await fetch(health, { signal: AbortSignal.timeout(2_000) });
        if (response.ok && (await response.text()).trim() === 'OK') return;
      }
    } catch {
      // Not listening yet.
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`mlflow server did not become healthy within ${timeoutMs} ms:\n${logs()}`);
}

/**
 * `dumpStacks()`'s output cut to fit the end of a CI log: only the processes whose command line has
 * `command` in it, one line per thread, its innermost `frames` frames as `function (file:line)`, from
 * the innermost out.
 */
export function compactStacks(dump: string, command: string, frames = 6): string {
  const out: string[] = [];
  for (const block of dump.split(/^== /m).filter(Boolean)) {
    const [head = '', ...lines] = block.split('\n');
    if (!head.includes(command)) continue;
    out.push(head.slice(0, 160));
    let thread: { name: string; frames: string[] } | undefined;
    const flush = () => thread && out.push(`  ${thread.name}: ${thread.frames.join(' < ')}`);
    for (const line of lines) {
      const started = /^(Current thread|Thread) (0x[0-9a-f]+)/.exec(line);
      if (started) {
        flush();
        thread = { name: `${started[1] === 'Current thread' ? 'current ' : ''}${started[2]}`, frames: [] };
        continue;
      }
      const frame = /^\s+File "(.+)", line (\d+) in (.+)$/.exec(line);
      if (!frame || !thread || thread.frames.length >= frames) continue;
      const file = frame[1]!.replace(/^.*\/site-packages\//, '').replace(/^.*\/lib\/python3[.0-9]*\//, '');
      thread.frames.push(`${frame[3]} (${file}:${frame[2]})`);
    }
    flush();
  }
  return out.join('\n');
}

export interface StartOptions {
  /** MLflow's `--static-prefix`, e.g. `/mlflow`. */
  readonly staticPrefix?: string;
  readonly startTimeoutMs?: number;
  /** A fixed port, e.g. to bring MLflow back where a proxy expects it after stop(); a free one by default. */
  readonly port?: number;
  /** Extra environment for the server (MLflow settings such as `MLFLOW_SERVER_CORS_ALLOWED_ORIGINS`). */
  readonly env?: Record<string, string>;
  /**
   * A release other than the pinned one (or FLOWGATE_MLFLOW_VERSION's), e.g. `3.18.0` for a feature the
   * pinned release lacks: scripts/mlflow-venv.sh makes or reuses its own venv.
   */
  readonly version?: string;
  /** Further `mlflow server` arguments, e.g. `['--app-name', 'basic-auth']`. */
  readonly args?: readonly string[];
  /** A venv another script made (e.g. scripts/mlflow-otel-venv.sh), instead of the release's own from scripts/mlflow-venv.sh. */
  readonly venv?: string;
  /** A program of the venv that runs `mlflow server` for it, e.g. `opentelemetry-instrument`. */
  readonly launcher?: string;
  /** Lets `dumpStacks()` show where a server that stopped answering is waiting. */
  readonly stackDumps?: boolean;
}

/**
 * A `sitecustomize` every Python process of the server imports at start: its threads' stacks on SIGUSR1,
 * each process to a file of its own beside the hook (the processes share one log pipe, where they mingle).
 */
const STACK_DUMP_HOOK = `import faulthandler, os, signal
_stacks = open(os.path.join(os.path.dirname(__file__), "stacks-%d.txt" % os.getpid()), "w")
faulthandler.register(signal.SIGUSR1, file=_stacks, all_threads=True)
`;

/**
 * Starts the pinned MLflow on a free loopback port with a throw-away SQLite store and proxied
 * artifacts, the way flowgate is deployed in front of it. One uvicorn worker (the default ASGI
 * server, so the FastAPI-only routes such as OTLP exist); job execution off for a fast start.
 */
export async function startMlflowServer(options: StartOptions = {}): Promise<MlflowServer> {
  // A free port is picked before MLflow binds it: another test's server may take it in between.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (e) {
      if (options.port !== undefined || attempt >= 3 || !/address already in use|Errno 98/i.test((e as Error).message)) throw e;
    }
  }
}

async function startOnce(options: StartOptions): Promise<MlflowServer> {
  const venv = options.venv ?? (await mlflowVenv(options.version));
  const dir = await mkdtemp(join(tmpdir(), 'flowgate-mlflow-'));
  const artifactsDir = join(dir, 'artifacts');
  const hooks = join(dir, 'python-hooks');
  if (options.stackDumps) {
    await mkdir(hooks);
    await writeFile(join(hooks, 'sitecustomize.py'), STACK_DUMP_HOOK);
  }
  const port = options.port ?? (await freePort());
  const prefix = (options.staticPrefix ?? '').replace(/\/+$/, '');
  const args = [
    'server',
    '--host', '127.0.0.1',
    '--port', String(port),
    '--backend-store-uri', `sqlite:///${join(dir, 'mlflow.db')}`,
    '--artifacts-destination', artifactsDir,
    '--serve-artifacts',
    '--workers', '1',
    ...(prefix ? ['--static-prefix', prefix] : []),
    ...(options.args ?? []),
  ];
  const command = options.launcher ? [join(venv, 'bin', options.launcher), join(venv, 'bin/mlflow')] : [join(venv, 'bin/mlflow')];
  const child = spawn(command[0]!, [...command.slice(1), ...args], {
    cwd: dir,
    env: pythonEnv(venv, { MLFLOW_SERVER_ENABLE_JOB_EXECUTION: 'false', ...(options.stackDumps ? { PYTHONPATH: hooks } : {}), ...options.env }),
    stdio: ['ignore', 'pipe', 'pipe'],
    // Own process group: `mlflow server` forks uvicorn, which forks its worker; stop() kills them all.
    detached: true,
  });
  const group = superviseGroup(child, 400, 5_000);
  const logs = group.logs;
  const jobQueueDirs = async () => (child.pid === undefined ? [] : jobQueueDirsOf(child.pid));
  const stop = async () => {
    const queues = await jobQueueDirs();
    await group.stop();
    await Promise.all([dir, ...queues].map((d) => rm(d, { recursive: true, force: true })));
  };

  const url = `http://127.0.0.1:${port}${prefix}`;
  try {
    await waitForHealth(url, child, logs, options.startTimeoutMs ?? 120_000);
  } catch (error) {
    await stop();
    throw error;
  }
  const dumpStacks = async (): Promise<string> => {
    if (!options.stackDumps || child.pid === undefined) return '';
    try {
      process.kill(-child.pid, 'SIGUSR1');
    } catch {
      return ''; // already gone
    }
    await new Promise((r) => setTimeout(r, 2_000));
    const dumps = (await readdir(hooks)).filter((f) => /^stacks-\d+\.txt$/.test(f));
    const parts = await Promise.all(
      dumps.map(async (file) => {
        const pid = file.slice('stacks-'.length, -'.txt'.length);
        const command = await readFile(`/proc/${pid}/cmdline`, 'utf8').then((c) => c.replaceAll('\0', ' ').trim(), () => '(exited)');
        return `== process ${pid}: ${command}\n${await readFile(join(hooks, file), 'utf8')}`;
      }),
    );
    return parts.join('\n');
  };
  return { url, port, venv, artifactsDir, logs, dumpStacks, jobQueueDirs, stop };
}
