import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN } from './flowgate.js';
import { storeSettings } from './test-store.js';

export const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const CLI = join(REPO_ROOT, 'dist/cli.js');

/** flowgate as the operator runs it: `node dist/cli.js serve`, in its own process. */
export interface FlowgateProcess {
  /** `http://127.0.0.1:<port>` (no base path). */
  readonly origin: string;
  /** The origin plus FLOWGATE_BASE_PATH, without a trailing slash. */
  readonly url: string;
  readonly pid: number;
  readonly dir: string;
  readonly child: ChildProcess;
  /** stdout + stderr so far (pino JSON lines), for failure messages. */
  logs(): string;
  /** Peak resident set size of the flowgate process so far, in bytes (`VmHWM`). */
  peakRss(): number;
  /** Current resident set size in bytes (`VmRSS`). */
  rss(): number;
  /** SIGTERM, SIGKILL after a grace period; removes the temporary store. Idempotent. */
  stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/**
 * Builds dist/ when it is missing or older than src/ or the UI's sources (`npm run build`). A lock
 * directory keeps two test files running in parallel from compiling over each other.
 */
export async function ensureBuilt(): Promise<void> {
  const fresh = () => existsSync(CLI) && statSync(CLI).mtimeMs >= Math.max(newestMtime(join(REPO_ROOT, 'src')), newestMtime(join(REPO_ROOT, 'ui/src')));
  if (fresh()) return;
  const lock = join(tmpdir(), `flowgate-build-${createHash('sha256').update(REPO_ROOT).digest('hex').slice(0, 12)}.lock`);
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      // Someone else is building; a lock older than the deadline is a crashed build's.
      if (Date.now() > deadline || Date.now() - statSync(lock, { throwIfNoEntry: false })!.mtimeMs > 180_000) {
        rmSync(lock, { recursive: true, force: true });
        continue;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    if (!fresh()) execFileSync('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, stdio: 'pipe', timeout: 180_000 });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function procStatusKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status);
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

export interface FlowgateProcessOptions {
  /** Extra FLOWGATE_* settings (FLOWGATE_UPSTREAM_URL at least). */
  readonly env?: Record<string, string>;
  readonly startTimeoutMs?: number;
  /** The program and its arguments (default: this Node, `dist/cli.js serve`). */
  readonly command?: readonly string[];
  /** The working directory (default: the temporary directory that holds the store). */
  readonly cwd?: string;
}

/**
 * Starts `node dist/cli.js serve` on a free loopback port (FLOWGATE_PORT=0; the port is read from
 * the "flowgate listening" log line) with a temporary store, the bootstrap admin of
 * test/helpers/flowgate.ts, metrics on a free port, and waits until `/healthz` answers.
 */
export async function startFlowgateProcess(options: FlowgateProcessOptions = {}): Promise<FlowgateProcess> {
  await ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-proc-'));
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('FLOWGATE_')) env[k] = v;
  Object.assign(env, {
    FLOWGATE_HOST: '127.0.0.1',
    FLOWGATE_PORT: '0',
    FLOWGATE_METRICS_HOST: '127.0.0.1',
    FLOWGATE_METRICS_PORT: '0',
    ...(await storeSettings(dir)),
    FLOWGATE_ADMIN_USERNAME: ADMIN.username,
    FLOWGATE_ADMIN_TOKEN: ADMIN.token,
    FLOWGATE_LOG_LEVEL: 'info',
    ...options.env,
  });
  installExitHook();
  const [program, ...args] = options.command ?? [process.execPath, CLI, 'serve'];
  const child = spawn(program!, args, { cwd: options.cwd ?? dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not spawn flowgate');
  live.add(child);

  const output: string[] = [];
  let size = 0;
  let listening: ((origin: string) => void) | undefined;
  const origin = new Promise<string>((r) => (listening = r));
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    output.push(text);
    size += text.length;
    // Keep the last ~256 KiB: a long test logs one line per request.
    while (size > 256 * 1024 && output.length > 1) size -= output.shift()!.length;
    partial += text;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.includes('flowgate listening')) continue;
      try {
        const url = (JSON.parse(line) as { url?: unknown }).url;
        if (typeof url === 'string') listening?.(url);
      } catch {
        // Not JSON: ignore.
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const logs = () => output.join('');
  const exited = new Promise<void>((r) => child.once('exit', () => r()));

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timedOut = await Promise.race([exited.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 5_000))]);
        if (timedOut) {
          child.kill('SIGKILL');
          await exited;
        }
      }
      live.delete(child);
      rmSync(dir, { recursive: true, force: true });
    })());

  const basePath = (options.env?.FLOWGATE_BASE_PATH ?? '').replace(/\/+$/, '');
  const timeoutMs = options.startTimeoutMs ?? 30_000;
  try {
    const found = await Promise.race([
      origin,
      exited.then(() => Promise.reject(new Error(`flowgate exited early (${child.exitCode ?? child.signalCode}):\n${logs()}`))),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`flowgate did not start within ${timeoutMs} ms:\n${logs()}`)), timeoutMs)),
    ]);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const ok = await fetch(`${found}${basePath}/healthz`, { signal: AbortSignal.timeout(2_000) }).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`flowgate /healthz did not answer within ${timeoutMs} ms:\n${logs()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    return {
      origin: found,
      url: found + basePath,
      pid,
      dir,
      child,
      logs,
      peakRss: () => procStatusKb(pid, 'VmHWM') * 1024,
      rss: () => procStatusKb(pid, 'VmRSS') * 1024,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
