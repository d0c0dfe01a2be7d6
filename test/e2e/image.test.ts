import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, type TestContext } from 'vitest';
import { ADMIN, adminAuth, basic } from '../helpers/flowgate.js';
import { buildImage, docker, imageSizeBytes, localBaseImage, startDockerDaemon, type DockerDaemon } from '../helpers/docker.js';
import { freePort, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { onPostgres } from '../helpers/test-store.js';

/*
 * The repo's Dockerfile, built by a real Docker daemon (the tests' own, host network only) on a base
 * made locally from Debian and the npm registry's Node 24, then run the way the manifests run it:
 * non-root, read-only root filesystem, the store on a volume, in front of the real MLflow.
 */

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
const TAG = 'flowgate:e2e';
/** The official node:24-bookworm-slim is about 230 MB; flowgate adds its production node_modules. */
const MAX_IMAGE_BYTES = 450 * 1024 * 1024;
const nodeFlags = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { flowgate: { nodeFlags: string[] } }).flowgate.nodeFlags;

// The container keeps its own SQLite store whatever the suite's engine: the PostgreSQL pass would build and run the same image again.
describe.skipIf(onPostgres())('the container image, built and run', () => {
  const suffix = randomBytes(4).toString('hex');
  const container = `flowgate-e2e-${suffix}`;
  const volume = `flowgate-e2e-store-${suffix}`;
  const scratch = mkdtempSync(join(tmpdir(), 'flowgate-image-e2e-'));
  let unavailable: string | undefined;
  let daemon: DockerDaemon | undefined;
  let mlflow: MlflowServer | undefined;
  let url = '';

  const skipIfUnavailable = (ctx: TestContext) => {
    if (unavailable) ctx.skip(`no Docker daemon here: ${unavailable}`);
  };
  const containerLogs = () => docker(['logs', '--tail', '60', container], 30_000).then((r) => r.stdout + r.stderr, (e: Error) => e.message);

  beforeAll(async () => {
    try {
      daemon = await startDockerDaemon();
    } catch (error) {
      unavailable = (error as Error).message.split('\n')[0];
      console.warn(`image e2e skipped: ${(error as Error).message}`);
      return;
    }
    mlflow = await startMlflowServer();
    const base = await localBaseImage();
    await buildImage(REPO_ROOT, TAG, { BASE_IMAGE: base });

    const port = await freePort();
    const metricsPort = await freePort();
    url = `http://127.0.0.1:${port}`;
    // An env file, so the admin token is in no process's argv.
    const envFile = join(scratch, 'env');
    writeFileSync(
      envFile,
      [
        'FLOWGATE_HOST=127.0.0.1',
        `FLOWGATE_PORT=${port}`,
        'FLOWGATE_METRICS_HOST=127.0.0.1',
        `FLOWGATE_METRICS_PORT=${metricsPort}`,
        `FLOWGATE_UPSTREAM_URL=${mlflow.url}`,
        `FLOWGATE_ADMIN_USERNAME=${ADMIN.username}`,
        `FLOWGATE_ADMIN_TOKEN=${ADMIN.token}`,
      ].join('\n') + '\n',
      { mode: 0o600 },
    );
    await docker(['volume', 'create', volume]);
    await docker([
      'run', '--detach', '--name', container,
      '--network', 'host',
      '--read-only',
      '--user', 'node',
      '--volume', `${volume}:/var/lib/flowgate`,
      '--env-file', envFile,
      TAG,
    ]);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) }).then((r) => r.ok, () => false);
      if (ok) break;
      const running = (await docker(['inspect', '--format', '{{.State.Running}}', container])).stdout.trim();
      if (running !== 'true' || Date.now() > deadline) throw new Error(`the container did not come up:\n${await containerLogs()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }, 2_400_000);

  afterAll(async () => {
    if (daemon) {
      await docker(['rm', '--force', '--volumes', container], 60_000).catch(() => undefined);
      await docker(['volume', 'rm', '--force', volume], 60_000).catch(() => undefined);
      // The previous build's image, untagged by this one; the layer cache stays.
      await docker(['image', 'prune', '--force'], 120_000).catch(() => undefined);
      await daemon.stop();
    }
    await mlflow?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }, 120_000);

  it('is built from the Dockerfile on Node 24, with a size it reports', async (ctx) => {
    skipIfUnavailable(ctx);
    const size = await imageSizeBytes(TAG);
    console.log(`flowgate image ${TAG}: ${(size / 1024 / 1024).toFixed(1)} MB`);
    expect(size).toBeLessThan(MAX_IMAGE_BYTES);
    expect((await docker(['image', 'inspect', '--format', '{{.Config.User}}', TAG])).stdout.trim()).toBe('node');
    const version = await docker(['run', '--rm', '--network', 'host', '--entrypoint', 'node', TAG, '--version']);
    expect(version.stdout.trim()).toMatch(/^v24\./);
    const modules = (await docker(['run', '--rm', '--network', 'host', '--entrypoint', 'ls', TAG, '/app/node_modules'])).stdout.split('\n');
    expect(modules).toContain('better-sqlite3');
    for (const dev of ['typescript', 'vitest', 'supertest']) expect(modules).not.toContain(dev);
  });

  it('runs as the node user on a read-only root filesystem, with the Node flags package.json names', async (ctx) => {
    skipIfUnavailable(ctx);
    const inspect = JSON.parse((await docker(['inspect', container])).stdout)[0] as {
      State: { Pid: number };
      HostConfig: { ReadonlyRootfs: boolean; NetworkMode: string };
    };
    expect(inspect.HostConfig.ReadonlyRootfs).toBe(true);
    expect(inspect.HostConfig.NetworkMode).toBe('host');
    const status = readFileSync(`/proc/${inspect.State.Pid}/status`, 'utf8');
    expect(/^Uid:\s+(\d+)/m.exec(status)?.[1]).toBe('1000');
    const cmdline = readFileSync(`/proc/${inspect.State.Pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(cmdline).toEqual(['node', ...nodeFlags, 'dist/cli.js', 'serve']);

    // /tmp is world-writable in the image: only the read-only mount refuses this.
    await expect(docker(['exec', container, 'touch', '/tmp/probe'])).rejects.toThrow(/Read-only file system/);
    const store = (await docker(['exec', container, 'ls', '/var/lib/flowgate'])).stdout;
    expect(store).toContain('flowgate.db');
  });

  it('answers through the real MLflow: ready, an allowed call, a denied call', async (ctx) => {
    skipIfUnavailable(ctx);
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ status: 'ready', store: true, upstream: true });

    const call = (auth: string, path: string, init: RequestInit = {}) =>
      fetch(`${url}${path}`, { ...init, headers: { Authorization: auth, 'Content-Type': 'application/json' } });
    const allowed = await call(adminAuth(), '/api/2.0/mlflow/experiments/search', { method: 'POST', body: JSON.stringify({ max_results: 5 }) });
    expect(allowed.status).toBe(200);
    expect(((await allowed.json()) as { experiments: Array<{ name: string }> }).experiments.map((e) => e.name)).toContain('Default');

    // A user with no grant, under the default NO_PERMISSIONS.
    expect((await call(adminAuth(), '/api/2.0/mlflow/users/create', { method: 'POST', body: JSON.stringify({ username: 'nogrant' }) })).status).toBe(201);
    const expiration = new Date(Date.now() + 86_400_000).toISOString();
    const issued = await call(adminAuth(), '/api/2.0/mlflow/permissions/users/access-token', {
      method: 'PATCH',
      body: JSON.stringify({ username: 'nogrant', expiration }),
    });
    expect(issued.status).toBe(200);
    const { token } = (await issued.json()) as { token: string };
    const denied = await call(basic('nogrant', token), '/api/2.0/mlflow/experiments/get?experiment_id=0');
    expect(denied.status).toBe(403);
    expect(((await denied.json()) as { error_code: string }).error_code).toBe('PERMISSION_DENIED');
  });
});
