import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseInferenceConfig } from '../../src/inference/config.js';
import { createInferenceGateway, type InferenceGateway } from '../../src/inference/gateway.js';
import { openKeyStore, type KeyStore } from '../../src/inference/keys.js';
import { createLogger } from '../../src/logging.js';
import {
  closeServer,
  countingProxy,
  listen,
  mlflowVenv,
  serveModel,
  trainAndRegister,
  type CountingProxy,
  type RunningModelServer,
} from '../helpers/model-server.js';

/**
 * A real `mlflow models serve` (pinned MLflow venv) behind the gateway, with a counting
 * pass-through in between that shows which requests reached the model server.
 */

const MODEL = 'flowgate-e2e-classifier';
const OLD_KEY = 'old-e2e-key-0123456789abcdef';
const NEW_KEY = 'new-e2e-key-0123456789abcdef';
const OTHER_ROUTE_KEY = 'other-route-key-0123456789ab';
/** Limited to the served model: the one key that must not reach other models or unlisted paths. */
const MODEL_KEY = 'model-only-key-0123456789abcdef';
const INPUT = JSON.stringify({ inputs: [[0.0, 0.1], [1.0, 0.9]] });

describe('inference routes in front of mlflow models serve', () => {
  let dir: string;
  let model: RunningModelServer | undefined;
  let counter: CountingProxy | undefined;
  let keys: KeyStore | undefined;
  let gateway: InferenceGateway | undefined;
  let server: http.Server | undefined;
  let base: string;
  let keyFile: string;
  const registry = new Registry();

  /** Replace the key file the way a config tool does: write aside, rename over. */
  const writeKeys = (entries: Array<[string, string, string?]>) => {
    const scoped = `  - id: model-only\n    value: ${MODEL_KEY}\n    models: [${MODEL}]\n`;
    const text = `keys:\n${entries.map(([id, value, route]) => `  - id: ${id}\n    value: ${value}\n${route ? `    routes: [${route}]\n` : ''}`).join('')}${scoped}`;
    writeFileSync(`${keyFile}.tmp`, text);
    renameSync(`${keyFile}.tmp`, keyFile);
  };

  const predict = (key?: string, path = '/models/classifier/invocations') =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...(key !== undefined ? { 'x-api-key': key } : {}) },
      body: INPUT,
    });

  beforeAll(async () => {
    const venv = await mlflowVenv();
    dir = mkdtempSync(join(tmpdir(), 'fg-inference-e2e-'));
    await trainAndRegister(venv, dir, MODEL);
    model = await serveModel(venv, dir, MODEL);
    counter = await countingProxy(model.url);

    keyFile = join(dir, 'keys.yaml');
    writeKeys([
      ['old', OLD_KEY],
      ['other', OTHER_ROUTE_KEY, 'other'],
    ]);
    const config = parseInferenceConfig(`
routes:
  - { name: classifier, upstream: "${counter.url}", pathPrefix: /models/classifier, stripPrefix: true, model: ${MODEL} }
  - { name: other, upstream: "${counter.url}", pathPrefix: /models/other, stripPrefix: true }
apiKeys: { file: "${keyFile}", pollIntervalSeconds: 0.1 }
`);
    const logger = createLogger('silent');
    keys = openKeyStore({
      file: keyFile,
      knownRoutes: new Set(config.routes.map((r) => r.name)),
      pollIntervalMs: config.apiKeys.pollIntervalSeconds * 1000,
      logger,
    });
    gateway = createInferenceGateway({ config, keys, registry, logger });
    server = http.createServer((req, res) => {
      if (!gateway!.handle(req, res)) res.writeHead(404).end();
    });
    base = await listen(server);
  }, 20 * 60_000);

  afterAll(async () => {
    keys?.close();
    await gateway?.close();
    if (server) await closeServer(server);
    await counter?.close();
    await model?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('returns the model prediction for the right key, without passing the key on', async () => {
    const seenBefore = counter!.seen.length;
    const res = await predict(OLD_KEY);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ predictions: [0, 1] });
    expect(counter!.seen.slice(seenBefore)).toEqual([{ method: 'POST', path: '/invocations', hadApiKey: false }]);
  });

  it.each([
    ['no key', undefined, 'An x-api-key header is required'],
    ['a wrong key', 'wrong-e2e-key-0123456789abcdef', 'Invalid API key'],
    ["another route's key", OTHER_ROUTE_KEY, 'Invalid API key'],
  ])('answers 401 to %s and the model server sees nothing', async (_label, key, message) => {
    const seenBefore = counter!.seen.length;
    const res = await predict(key);
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error_code: 'UNAUTHENTICATED', message });
    expect(counter!.seen.length).toBe(seenBefore);
  });

  it("accepts the other route's key on its own route", async () => {
    const res = await predict(OTHER_ROUTE_KEY, '/models/other/invocations');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ predictions: [0, 1] });
  });

  it('keeps /ping behind the key (publicHealth is off) and never exposes /metrics', async () => {
    const seenBefore = counter!.seen.length;
    expect((await fetch(`${base}/models/classifier/ping`)).status).toBe(401);
    expect((await fetch(`${base}/models/classifier/metrics`, { headers: { 'x-api-key': OLD_KEY } })).status).toBe(404);
    expect(counter!.seen.length).toBe(seenBefore);
    const ping = await fetch(`${base}/models/classifier/ping`, { headers: { 'x-api-key': OLD_KEY } });
    expect(ping.status).toBe(200);
  });

  it('reads paths as the model server does: uvicorn decodes percent-escapes once and matches case-sensitively', async () => {
    expect((await fetch(`${model!.url}/%70ing`)).status).toBe(200);
    expect((await fetch(`${model!.url}/Ping`)).status).toBe(404);
    const decoded = await fetch(`${model!.url}/%69nvocations`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: INPUT });
    expect(await decoded.json()).toEqual({ predictions: [0, 1] });
  });

  it('lets a key limited to the served model predict, in any spelling the server reads as /invocations', async () => {
    const seenBefore = counter!.seen.length;
    for (const path of ['/models/classifier/invocations', '/models/classifier/%69nvocations']) {
      const res = await predict(MODEL_KEY, path);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ predictions: [0, 1] });
    }
    // flowgate forwards the path it matched, with escaped letters decoded.
    expect(counter!.seen.slice(seenBefore).map((s) => s.path)).toEqual(['/invocations', '/invocations']);
  });

  it.each([
    ['GET', '/v2/models/other/stats'],
    ['POST', '/v2/repository/models/other/load'],
    ['POST', '/v1/models/other:predict/'],
    ['POST', '/v1/models/other:PREDICT'],
    ['POST', '/v1/models/other%3Apredict'],
    ['POST', '/v2/models/other/versions/1/infer/'],
    ['POST', '/v2/models/other/infer'],
    ['GET', '/openapi.json'],
    ['GET', '/docs'],
  ])('refuses the model-limited key on %s %s before the model server sees it', async (method, path) => {
    const seenBefore = counter!.seen.length;
    const res = await fetch(`${base}/models/classifier${path}`, {
      method,
      headers: { 'x-api-key': MODEL_KEY, 'Content-Type': 'application/json' },
      ...(method === 'POST' ? { body: INPUT } : {}),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({ error_code: 'UNAUTHENTICATED', message: 'Invalid API key' });
    expect(counter!.seen.length).toBe(seenBefore);
  });

  it.each([
    ['/metrics', 404],
    ['/metrics/', 404],
    ['/%6detrics', 404],
    ['/%6D%65%74%72%69%63%73', 404],
    ['/Metrics', 404],
    ['/METRICS', 404],
    ['/metrics;x', 400],
    ['/metrics%3Bx', 400],
    ['/%256detrics', 400],
    ['/metrics%2F', 400],
  ])('never forwards the model server metrics spelled %s (%i), whatever the key', async (path, status) => {
    const seenBefore = counter!.seen.length;
    for (const key of [OLD_KEY, MODEL_KEY]) expect((await fetch(`${base}/models/classifier${path}`, { headers: { 'x-api-key': key } })).status).toBe(status);
    expect(counter!.seen.length).toBe(seenBefore);
  });

  it('rotates without restart: both keys work during the overlap, then only the new one', async () => {
    const handleBefore = gateway!.handle;
    writeKeys([
      ['old', OLD_KEY],
      ['new', NEW_KEY],
      ['other', OTHER_ROUTE_KEY, 'other'],
    ]);
    await vi.waitFor(async () => expect((await predict(NEW_KEY)).status).toBe(200), { timeout: 10_000, interval: 100 });
    const overlapOld = await predict(OLD_KEY);
    expect(overlapOld.status).toBe(200);
    expect(await overlapOld.json()).toEqual({ predictions: [0, 1] });

    writeKeys([
      ['new', NEW_KEY],
      ['other', OTHER_ROUTE_KEY, 'other'],
    ]);
    await vi.waitFor(async () => expect((await predict(OLD_KEY)).status).toBe(401), { timeout: 10_000, interval: 100 });
    const afterNew = await predict(NEW_KEY);
    expect(afterNew.status).toBe(200);
    expect(await afterNew.json()).toEqual({ predictions: [0, 1] });

    // Same gateway and listener throughout, and the rejected old key never reached the model server.
    expect(gateway!.handle).toBe(handleBefore);
    const seenBefore = counter!.seen.length;
    expect((await predict(OLD_KEY)).status).toBe(401);
    expect(counter!.seen.length).toBe(seenBefore);
  });

  it('counted every outcome by route', async () => {
    const text = await registry.getSingleMetricAsString('flowgate_inference_requests_total');
    for (const result of ['allowed', 'missing_key', 'wrong_key', 'not_found'])
      expect(text).toMatch(new RegExp(`route="classifier",result="${result}"\\} [1-9]`));
  });
});
