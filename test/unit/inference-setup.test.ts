import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InferenceConfigError, openInference, type InferenceGateway } from '../../src/inference/index.js';
import { createLogger } from '../../src/logging.js';
import { closeServer, fakeModelServer, listen, type FakeModelServer } from '../helpers/model-server.js';

const FILE_KEY = 'file-key-0123456789abcdef';
const ENV_KEY = 'env-key-0123456789abcdef';

describe('openInference (config file + key file + env keys → gateway)', () => {
  let dir: string;
  let upstream: FakeModelServer;
  let gateway: InferenceGateway;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fg-inf-setup-'));
    upstream = await fakeModelServer();
    writeFileSync(join(dir, 'keys.yaml'), `keys:\n  - { id: file, value: ${FILE_KEY}, routes: [iris] }\n`);
    writeFileSync(
      join(dir, 'routes.yaml'),
      `routes:\n  - { name: iris, upstream: "${upstream.url}", pathPrefix: /models/iris, stripPrefix: true }\napiKeys: { file: "${join(dir, 'keys.yaml')}" }\n`,
    );
    gateway = openInference({ configFile: join(dir, 'routes.yaml'), envKeys: ENV_KEY, registry: new Registry(), logger: createLogger('silent') });
    server = http.createServer((req, res) => {
      if (!gateway.handle(req, res)) res.writeHead(404, { 'x-handled-by': 'tracking' }).end();
    });
    base = await listen(server);
  });

  afterAll(async () => {
    await gateway.close();
    await closeServer(server);
    await upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('accepts keys from the file and from the environment, and nothing else', async () => {
    const call = (key?: string) => fetch(`${base}/models/iris/invocations`, { method: 'POST', headers: key ? { 'x-api-key': key } : {}, body: '{}' });
    expect((await call(FILE_KEY)).status).toBe(200);
    expect((await call(ENV_KEY)).status).toBe(200);
    expect((await call('nope-nope-nope-nope')).status).toBe(401);
    expect((await call()).status).toBe(401);
    expect((await fetch(`${base}/api/2.0/mlflow/experiments/search`)).headers.get('x-handled-by')).toBe('tracking');
  });

  it('refuses to start on a key scoped to a route that does not exist', () => {
    writeFileSync(join(dir, 'bad-keys.yaml'), `keys:\n  - { id: k, value: ${FILE_KEY}, routes: [irs] }\n`);
    writeFileSync(join(dir, 'bad.yaml'), `routes:\n  - { name: iris, upstream: "http://127.0.0.1:1", pathPrefix: /m }\napiKeys: { file: "${join(dir, 'bad-keys.yaml')}" }\n`);
    const open = () => openInference({ configFile: join(dir, 'bad.yaml'), registry: new Registry(), logger: createLogger('silent') });
    expect(open).toThrow(InferenceConfigError);
    expect(open).toThrow(/keys\[0\]\.routes: no route is named "irs"/);
  });

  it('refuses to start on a file key that is also in FLOWGATE_INFERENCE_API_KEYS', () => {
    // The file scopes the key to iris; from the environment it would open every route.
    const open = () => openInference({ configFile: join(dir, 'routes.yaml'), envKeys: FILE_KEY, registry: new Registry(), logger: createLogger('silent') });
    expect(open).toThrow(InferenceConfigError);
    expect(open).toThrow(/keys\[0\]: same key as "env-1" from FLOWGATE_INFERENCE_API_KEYS/);
  });
});
