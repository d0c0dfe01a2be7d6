import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ADMIN, basic } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { readImageRecipe, type ImageRecipe } from '../helpers/dockerfile.js';

/*
 * The Dockerfile, rehearsed without a container engine, for machines where test/e2e/image (the
 * image really built and run, which needs root for its own dockerd) skips: the build stage's COPY
 * and RUN steps run in a scratch /app, the runtime stage's COPY steps assemble the image's /app
 * from what they name, and its ENTRYPOINT + CMD start flowgate there, in front of the real MLflow.
 * It catches a build that needs a file the stage does not copy in, a runtime file the image leaves
 * out, dev dependencies shipped, and settings that disagree with flowgate's defaults. It runs on
 * this machine's Node, not the image's; the base image, apt-get and USER are test/e2e/image's.
 */

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
/** System packages of the base image: nothing to rehearse on the host. */
const isSystemStep = (command: string) => /^apt-get\b/.test(command.trim());

const recipe: ImageRecipe = readImageRecipe(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8'));

function copyInto(root: string, workdir: string, sources: readonly string[], destination: string, from: string): void {
  const target = join(root, destination.startsWith('/') ? destination : join(workdir, destination));
  const intoDirectory = destination.endsWith('/') || sources.length > 1;
  for (const source of sources) {
    const path = join(from, source);
    if (!existsSync(path)) throw new Error(`COPY ${source}: not there to copy`);
    const dest = intoDirectory ? join(target, source.split('/').pop()!) : target;
    mkdirSync(dirname(dest), { recursive: true });
    cpSync(path, dest, { recursive: true });
  }
}

describe('the container image, rehearsed from the Dockerfile', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'flowgate-image-'));
  const buildRoot = join(scratch, 'build');
  const imageRoot = join(scratch, 'image');
  const build = recipe.stages[0]!;
  const runtime = recipe.stages.at(-1)!;
  const appDir = join(imageRoot, runtime.workdir);
  let mlflow: MlflowServer;
  let fg: FlowgateProcess;

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    for (const step of build.steps) {
      if (step.kind === 'copy') copyInto(buildRoot, build.workdir, step.sources, step.destination, REPO_ROOT);
      else if (!isSystemStep(step.command))
        execFileSync('sh', ['-c', step.command], {
          cwd: join(buildRoot, build.workdir),
          // The commands as written; npm may take tarballs from the cache the checkout's own install filled.
          env: { ...process.env, npm_config_prefer_offline: 'true' },
          stdio: 'pipe',
          timeout: 600_000,
        });
    }
    for (const step of runtime.steps) {
      if (step.kind !== 'copy') continue;
      if (step.from !== undefined && step.from !== build.name) throw new Error(`COPY --from=${step.from}: not the build stage`);
      // --from sources are paths in the build stage's filesystem.
      copyInto(imageRoot, runtime.workdir, step.sources, step.destination, step.from === undefined ? REPO_ROOT : buildRoot);
    }
    const [program, ...args] = [...recipe.entrypoint, ...recipe.cmd];
    expect(program).toBe('node');
    const dataDir = join(scratch, 'volume');
    mkdirSync(dataDir);
    fg = await startFlowgateProcess({
      command: [process.execPath, ...args],
      cwd: appDir,
      env: {
        ...runtime.env,
        // The image's store path, moved into the scratch volume.
        FLOWGATE_DB_PATH: join(dataDir, runtime.env.FLOWGATE_DB_PATH!.split('/').pop()!),
        FLOWGATE_UPSTREAM_URL: mlflow.url,
      },
      startTimeoutMs: 60_000,
    });
  }, 900_000);

  afterAll(async () => {
    await fg?.stop();
    await mlflow?.stop();
    rmSync(scratch, { recursive: true, force: true });
  });

  it('ships the production dependencies only, with better-sqlite3 compiled', () => {
    const modules = readdirSync(join(appDir, 'node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['better-sqlite3', 'http-proxy-3', 'openid-client', 'pino', 'prom-client']));
    for (const dev of ['typescript', 'vitest', 'supertest', 'oidc-provider', 'playwright-core']) expect(modules).not.toContain(dev);
    expect(existsSync(join(appDir, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'))).toBe(true);
    expect(existsSync(join(appDir, 'src'))).toBe(false);
  });

  it('keeps its store on the volume and exposes the ports flowgate listens on by default', () => {
    const defaults = loadConfig({ FLOWGATE_UPSTREAM_URL: 'http://127.0.0.1:5000' });
    expect(recipe.expose).toEqual([defaults.port, defaults.metricsPort]);
    expect(recipe.volumes).toEqual([dirname(runtime.env.FLOWGATE_DB_PATH!)]);
    expect(runtime.env.NODE_ENV).toBe('production');
    expect(runtime.user).toBe('node');
    // Both stages on the base the build argument names, by default the official Node 24 image.
    expect(recipe.stages.map((s) => s.base)).toEqual(['${BASE_IMAGE}', '${BASE_IMAGE}']);
    expect(recipe.globalArgs.BASE_IMAGE).toMatch(/^node:24-bookworm-slim$/);
    const prepared = runtime.steps.find((s) => s.kind === 'run' && s.command.includes(recipe.volumes[0]!));
    expect(prepared?.kind === 'run' && prepared.command).toContain(`chown ${runtime.user}:${runtime.user} ${recipe.volumes[0]}`);
  });

  it('starts from its entrypoint and serves MLflow behind authorization', async () => {
    expect((await request(fg.url).get('/healthz')).status).toBe(200);
    const ready = await request(fg.url).get('/readyz');
    expect(ready.body).toEqual({ status: 'ready', store: true, upstream: true });

    const anonymous = await request(fg.url).post('/api/2.0/mlflow/experiments/search').send({ max_results: 5 });
    expect(anonymous.status).toBe(401);
    expect(anonymous.body.error_code).toBe('UNAUTHENTICATED');

    const admin = await request(fg.url)
      .post('/api/2.0/mlflow/experiments/search')
      .set('Authorization', basic(ADMIN.username, ADMIN.token))
      .send({ max_results: 5 });
    expect(admin.status).toBe(200);
    expect(admin.body.experiments.map((e: { name: string }) => e.name)).toContain('Default');

    const openapi = await request(fg.url).get('/flowgate/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.body.openapi).toMatch(/^3\./);
  });

  it('runs with the Node flags package.json names (the ones the benchmark measured)', () => {
    const pkg = JSON.parse(readFileSync(join(appDir, 'package.json'), 'utf8')) as { flowgate: { nodeFlags: string[] } };
    const cmdline = readFileSync(`/proc/${fg.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    expect(cmdline.slice(1, 1 + pkg.flowgate.nodeFlags.length)).toEqual(pkg.flowgate.nodeFlags);
    expect(cmdline.slice(-2)).toEqual(['dist/cli.js', 'serve']);
  });
});
