// A throwaway PostgreSQL cluster on 127.0.0.1 for tests and the bench: Debian's server binaries, a
// temporary directory, trust authentication, its own process group (killed if the caller exits).
import { execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

/** Debian's PostgreSQL binaries (`/usr/lib/postgresql/<major>/bin`), the newest installed. */
export function postgresBinDir() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return majors[0] && join(root, majors[0], 'bin');
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** PostgreSQL refuses to run as root: as root the cluster belongs to the `postgres` user. */
function serverUser() {
  if (process.getuid?.() !== 0) return {};
  const id = (flag) => Number(execFileSync('id', [flag, 'postgres']).toString().trim());
  return { uid: id('-u'), gid: id('-g') };
}

const live = new Set();
let exitHookInstalled = false;
function killOnExit(pid) {
  live.add(pid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const group of live) {
      try {
        process.kill(-group, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  });
}

let counter = 0;

/** The pids whose parent is `parent`, from /proc (Linux). */
function childrenOf(parent) {
  const pids = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses, so read after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === parent) pids.push(Number(entry));
    } catch {
      // Exited meanwhile.
    }
  }
  return pids;
}

function signal(pid, name) {
  try {
    process.kill(pid, name);
  } catch {
    // Exited meanwhile.
  }
}

/** `settings`: extra server settings (`-c name=value`), e.g. TLS; file paths in them are read as the server's user. */
export async function startPostgres({ settings = {}, prepare } = {}) {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL is not installed (Debian: apt-get install postgresql); scripts/setup.sh installs it');
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-pg-'));
  const data = join(dir, 'data');
  const owner = serverUser();
  if (owner.uid !== undefined) chownSync(dir, owner.uid, owner.gid);
  execFileSync(join(bin, 'initdb'), ['-D', data, '-U', 'flowgate', '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], { stdio: 'pipe', ...owner });
  const prepared = prepare?.({ dir, chown: (path) => owner.uid !== undefined && chownSync(path, owner.uid, owner.gid) }) ?? {};
  const allSettings = { ...settings, ...prepared };
  const port = await freePort();
  const url = (database = 'postgres') => `postgres://flowgate@127.0.0.1:${port}/${database}`;
  let child;
  let output = [];
  const pgCtl = (...args) => execFileSync(join(bin, 'pg_ctl'), [...args, '-D', data, '-w'], { stdio: 'pipe', ...owner });

  async function start() {
    output = [];
    child = spawn(
      join(bin, 'postgres'),
      ['-D', data, '-h', '127.0.0.1', '-p', String(port), '-k', dir, '-c', 'fsync=off', '-c', 'max_connections=300', '-c', 'shared_buffers=64MB', ...Object.entries(allSettings).flatMap(([k, v]) => ['-c', `${k}=${v}`])],
      { detached: true, stdio: ['ignore', 'pipe', 'pipe'], ...owner },
    );
    killOnExit(child.pid);
    const keep = (chunk) => {
      output.push(chunk.toString());
      if (output.length > 200) output.shift();
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`PostgreSQL exited at start:\n${output.join('')}`);
      const c = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 1000 });
      try {
        await c.connect();
        await c.end();
        return;
      } catch {
        await c.end().catch(() => undefined);
        if (Date.now() > deadline) throw new Error(`PostgreSQL did not start:\n${output.join('')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async function halt(mode) {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    try {
      pgCtl('stop', '-m', mode);
    } catch {
      process.kill(-child.pid, 'SIGKILL');
    }
    await exited;
    live.delete(child.pid);
  }

  await start();
  return {
    port,
    url,
    async createDatabase(name = `fg_${process.pid}_${++counter}`) {
      const c = new pg.Client({ connectionString: url() });
      await c.connect();
      try {
        await c.query(`CREATE DATABASE "${name}"`);
      } finally {
        await c.end();
      }
      return url(name);
    },
    // A fast shutdown: clients are disconnected at once (a smart one would wait for them to leave).
    pause: () => halt('fast'),
    /** The postmaster's pid. */
    get pid() {
      return child?.pid;
    },
    /**
     * SIGSTOP to the postmaster and then to each of its processes (every backend calls setsid(), so
     * they are not in its process group): the server keeps its sockets, the kernel still accepts TCP
     * connections into the backlog, and nothing answers, as on a frozen host. Pair with `thaw()` in a finally.
     */
    freeze() {
      process.kill(child.pid, 'SIGSTOP');
      for (const pid of childrenOf(child.pid)) signal(pid, 'SIGSTOP');
    },
    thaw() {
      for (const pid of childrenOf(child.pid)) signal(pid, 'SIGCONT');
      process.kill(child.pid, 'SIGCONT');
    },
    start,
    logs: () => output.join(''),
    async stop() {
      await halt('immediate');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
