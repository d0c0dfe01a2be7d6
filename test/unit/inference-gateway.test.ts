import http from 'node:http';
import net from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseInferenceConfig } from '../../src/inference/config.js';
import { createInferenceGateway, type InferenceGateway } from '../../src/inference/gateway.js';
import { parseKeyFile } from '../../src/inference/key-file.js';
import { staticKeyStore } from '../../src/inference/keys.js';
import { createLogger } from '../../src/logging.js';
import { closeServer, fakeModelServer, freePort, listen, type FakeModelServer } from '../helpers/model-server.js';

const IRIS_KEY = 'iris-key-0123456789abcdef';
const ALL_KEY = 'all-key-0123456789abcdef';
const FRAUD_KEY = 'fraud-key-0123456789abcdef';
/** Opens only the model `iris`, on any route. */
const IRIS_MODEL_KEY = 'iris-model-key-0123456789abcdef';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Raw requests: fetch would resolve `..` and merge repeated headers before they left the client. */
function send(base: string, path: string, opts: { method?: string; headers?: Array<[string, string]>; body?: string } = {}): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, path, method: opts.method ?? 'GET', agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    const given = new Map<string, string[]>();
    for (const [k, v] of opts.headers ?? []) given.set(k.toLowerCase(), [...(given.get(k.toLowerCase()) ?? []), v]);
    for (const [k, values] of given) req.setHeader(k, values.length === 1 ? values[0]! : values);
    req.on('error', reject);
    req.end(opts.body);
  });
}

describe('inference gateway', () => {
  let upstream: FakeModelServer;
  let fraud: FakeModelServer;
  let gateway: InferenceGateway;
  let server: http.Server;
  let base: string;
  let deadPort: number;
  const registry = new Registry();
  const logLines: string[] = [];

  beforeAll(async () => {
    upstream = await fakeModelServer();
    fraud = await fakeModelServer();
    deadPort = await freePort();
    const config = parseInferenceConfig(`
routes:
  - { name: iris, upstream: "${upstream.url}", pathPrefix: /models/iris, stripPrefix: true, model: iris }
  - { name: fraud, upstream: "${fraud.url}/base", hosts: [fraud.models.example.com], publicHealth: true }
  - { name: down, upstream: "http://127.0.0.1:${deadPort}", pathPrefix: /models/down }
  - { name: slow, upstream: "${upstream.url}", pathPrefix: /models/slow, stripPrefix: true }
upstreamTimeoutSeconds: 0.3
`);
    const keys = parseKeyFile(
      `keys:
  - { id: iris-team, value: ${IRIS_KEY}, routes: [iris] }
  - { id: all, value: ${ALL_KEY} }
  - { id: fraud-team, value: ${FRAUD_KEY}, routes: [fraud] }
  - { id: iris-model, value: ${IRIS_MODEL_KEY}, models: [iris] }
`,
      'keys.yaml',
    );
    const logger = createLogger('debug', { write: (s: string) => void logLines.push(s) });
    gateway = createInferenceGateway({ config, keys: staticKeyStore(keys), registry, logger });
    server = http.createServer((req, res) => {
      if (!gateway.handle(req, res)) {
        res.writeHead(404, { 'x-handled-by': 'tracking' });
        res.end();
      }
    });
    base = await listen(server);
  });

  afterAll(async () => {
    await gateway.close();
    await closeServer(server);
    await upstream.close();
    await fraud.close();
  });

  beforeEach(() => {
    upstream.requests.length = 0;
    fraud.requests.length = 0;
    upstream.handler = undefined;
  });

  it('forwards a keyed request with the prefix stripped, query kept and the key removed', async () => {
    const r = await send(base, '/models/iris/invocations?format=json', {
      method: 'POST',
      headers: [['x-api-key', IRIS_KEY], ['content-type', 'application/json']],
      body: '{"inputs":[[1,2]]}',
    });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ method: 'POST', url: '/invocations?format=json', bodyBytes: 18 });
    expect(upstream.requests).toHaveLength(1);
    expect(upstream.requests[0]!.headers['x-api-key']).toBeUndefined();
    expect(upstream.requests[0]!.headers.host).toBe(new URL(upstream.url).host);
  });

  it("keeps the caller's credentials for flowgate and MLflow from the model server: session cookies, Authorization, identity headers", async () => {
    // A browser on the same host attaches its session cookie (and cached Basic credentials) to a model route; a model server that logs requests must not hold them.
    const r = await send(base, '/models/iris/invocations', {
      method: 'POST',
      headers: [
        ['x-api-key', IRIS_KEY],
        ['authorization', 'Basic YWxpY2U6Zmd0X3NlY3JldA=='],
        ['proxy-authorization', 'Basic YWxpY2U6Zmd0X3NlY3JldA=='],
        ['cookie', '__Host-flowgate_session=s3cr3t; model_ui=keep; __Secure-flowgate_session=s3cr3t2; FLOWGATE_login=b1nd'],
        ['x-forwarded-user', 'admin'],
        ['X_Flowgate_User', 'admin'],
        ['x-request-tag', 'kept'],
      ],
      body: '{}',
    });
    expect(r.status).toBe(200);
    const seen = upstream.requests[0]!.headers;
    expect(seen.authorization).toBeUndefined();
    expect(seen['proxy-authorization']).toBeUndefined();
    expect(seen.cookie).toBe('model_ui=keep');
    expect(seen['x-forwarded-user']).toBeUndefined();
    expect(Object.keys(seen).filter((h) => /flowgate/i.test(h))).toEqual([]);
    expect(seen['x-request-tag']).toBe('kept');
    // Only flowgate's cookies in the header: no Cookie header at all.
    await send(base, '/models/iris/invocations', { method: 'POST', headers: [['x-api-key', IRIS_KEY], ['cookie', 'flowgate_session=s3cr3t']], body: '{}' });
    expect(upstream.requests[1]!.headers.cookie).toBeUndefined();
  });

  it("serves a model server's answer so it cannot act in flowgate's origin: never a page, never flowgate's cookies", async () => {
    // What a model server runs is what a user with EDIT on an experiment logged; a route without hosts shares the UI's origin.
    upstream.handler = (req, res) => {
      req.resume();
      res.setHeader('Content-Type', 'text/html');
      res.setHeader('Set-Cookie', ['flowgate_session=attackers-own; Path=/api', '__Host-flowgate_login=x; Path=/; Secure', 'model_pref=1; Path=/models']);
      res.end('<script>fetch("/api/2.0/mlflow/permissions/batch",{method:"POST"})</script>');
    };
    const r = await send(base, '/models/iris/v2/health/ready', { headers: [['x-api-key', IRIS_KEY]] });
    expect(r.status).toBe(200);
    expect(r.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['set-cookie']).toEqual(['model_pref=1; Path=/models']);
    expect(r.body).toContain('<script>');
  });

  it.each([
    ['/v1/models/iris:predict', 'POST'],
    ['/v2/models/iris/versions/1/infer', 'POST'],
    ['/v2/models/iris', 'GET'],
    ['/v2/models/iris/ready', 'GET'],
    ['/invocations', 'POST'],
  ])('passes %s through unchanged', async (path, method) => {
    const r = await send(base, `/models/iris${path}`, { method, headers: [['x-api-key', ALL_KEY]] });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).url).toBe(path);
  });

  it('routes by Host (any port) onto the upstream base path', async () => {
    const r = await send(base, '/v2/models/fraud/infer', {
      method: 'POST',
      headers: [['host', 'Fraud.Models.Example.com:8443'], ['x-api-key', FRAUD_KEY]],
    });
    expect(r.status).toBe(200);
    expect(fraud.requests.map((q) => q.url)).toEqual(['/base/v2/models/fraud/infer']);
  });

  it.each([
    ['no key', [], 'An x-api-key header is required', 'missing_key'],
    ['an empty key', [['x-api-key', '']], 'The x-api-key header is empty', 'missing_key'],
    ['a repeated key', [['x-api-key', IRIS_KEY], ['x-api-key', IRIS_KEY]], 'Send the x-api-key header exactly once', 'wrong_key'],
    ['a wrong key', [['x-api-key', 'nope-nope-nope-nope']], 'Invalid API key', 'wrong_key'],
    ['a key of another route', [['x-api-key', FRAUD_KEY]], 'Invalid API key', 'wrong_key'],
  ] as Array<[string, Array<[string, string]>, string, string]>)('answers 401 to %s without contacting the model server', async (_label, headers, message) => {
    const r = await send(base, '/models/iris/invocations', { method: 'POST', headers: [...headers, ['content-type', 'application/json']], body: '{}' });
    expect(r.status).toBe(401);
    expect(r.headers['content-type']).toBe('application/json');
    expect(JSON.parse(r.body)).toEqual({ error_code: 'UNAUTHENTICATED', message });
    expect(r.headers['www-authenticate']).toBeUndefined();
    expect(r.headers.connection).toBe('close');
    expect(upstream.requests).toHaveLength(0);
  });

  it.each([
    '/models/iris/../../api/2.0/mlflow/experiments/search',
    '/models/iris/%2e%2e/x',
    '/models%2Firis/invocations',
    '/models/iris/a%5cb',
  ])('refuses %s with 400 before any key check', async (path) => {
    const r = await send(base, path, { headers: [['x-api-key', ALL_KEY]] });
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(upstream.requests).toHaveLength(0);
  });

  it('leaves other paths and hosts to the tracking side', async () => {
    for (const [path, host] of [
      ['/api/2.0/mlflow/experiments/search', 'localhost'],
      ['/models/iris2/invocations', 'localhost'],
      ['/invocations', 'other.example.com'],
    ] as const) {
      const r = await send(base, path, { headers: [['host', host]] });
      expect(r.headers['x-handled-by']).toBe('tracking');
    }
  });

  it('hides the model server /metrics even from a valid key', async () => {
    const r = await send(base, '/models/iris/metrics', { headers: [['x-api-key', ALL_KEY]] });
    expect(r.status).toBe(404);
    expect(JSON.parse(r.body).error_code).toBe('ENDPOINT_NOT_FOUND');
    expect(upstream.requests).toHaveLength(0);
  });

  describe('a key limited to one model', () => {
    it.each([
      ['POST', '/invocations', '/invocations'],
      ['POST', '/v1/models/iris:predict', '/v1/models/iris:predict'],
      ['POST', '/v1/models/iris:predict/', '/v1/models/iris:predict/'],
      ['POST', '/v2/models/iris/versions/1/infer/', '/v2/models/iris/versions/1/infer/'],
      ['POST', '/v2/models/%69ris/infer', '/v2/models/iris/infer'],
      ['GET', '/v2/models/iris/ready', '/v2/models/iris/ready'],
      ['GET', '/ping', '/ping'],
    ])('reaches its model: %s %s', async (method, path, forwarded) => {
      const r = await send(base, `/models/iris${path}`, { method, headers: [['x-api-key', IRIS_MODEL_KEY]] });
      expect(r.status).toBe(200);
      expect(upstream.requests.map((q) => q.url)).toEqual([forwarded]);
    });

    // Each was once charged to the route's model (iris) and forwarded.
    it.each([
      ['GET', '/v2/models/other/stats'],
      ['GET', '/v2/models/stats'],
      ['POST', '/v2/repository/models/other/load'],
      ['POST', '/v2/repository/models/iris/unload'],
      ['POST', '/v1/models/other:predict/'],
      ['POST', '/v1/models/other:PREDICT'],
      ['POST', '/v1/models/other%3Apredict'],
      ['POST', '/v1/models/iris:PREDICT'],
      ['POST', '/v2/models/other/versions/1/infer/'],
      ['POST', '/v2/models/other/infer'],
      ['POST', '/v2/models/IRIS/infer'],
      ['POST', '/V2/models/iris/infer'],
      ['POST', '/openai/v1/chat/completions'],
      ['GET', '/docs'],
    ])('is refused with 401 on %s %s, which the model server never sees', async (method, path) => {
      const r = await send(base, `/models/iris${path}`, { method, headers: [['x-api-key', IRIS_MODEL_KEY]], body: '{}' });
      expect(r.status).toBe(401);
      expect(JSON.parse(r.body)).toEqual({ error_code: 'UNAUTHENTICATED', message: 'Invalid API key' });
      expect(upstream.requests).toHaveLength(0);
    });

    it.each(['/v2/models/other;x/infer', '/v2/models/iris;/infer', '/v2/models/ir%2569s/infer'])(
      'gets 400 for the ambiguous %s',
      async (path) => {
        const r = await send(base, `/models/iris${path}`, { method: 'POST', headers: [['x-api-key', IRIS_MODEL_KEY]] });
        expect(r.status).toBe(400);
        expect(JSON.parse(r.body).error_code).toBe('INVALID_PARAMETER_VALUE');
        expect(upstream.requests).toHaveLength(0);
      },
    );

    it('leaves an unscoped key free to reach paths flowgate does not list', async () => {
      const r = await send(base, '/models/iris/v2/repository/index', { method: 'POST', headers: [['x-api-key', ALL_KEY]] });
      expect(r.status).toBe(200);
      expect(upstream.requests.map((q) => q.url)).toEqual(['/v2/repository/index']);
    });
  });

  it.each(['/metrics', '/metrics/', '/%6detrics', '/%6D%65%74%72%69%63%73', '/Metrics', '/METRICS/x'])(
    'hides the model server metrics spelled %s, even from a valid key',
    async (path) => {
      const r = await send(base, `/models/iris${path}`, { headers: [['x-api-key', ALL_KEY]] });
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body).error_code).toBe('ENDPOINT_NOT_FOUND');
      expect(upstream.requests).toHaveLength(0);
    },
  );

  it.each(['/metrics;x', '/metrics%3Bx', '/%256detrics', '/metrics/..', '/x/../metrics', '/%2e%2e/metrics'])(
    'refuses the ambiguous %s with 400 before it could reach the metrics',
    async (path) => {
      const r = await send(base, `/models/iris${path}`, { headers: [['x-api-key', ALL_KEY]] });
      expect(r.status).toBe(400);
      expect(upstream.requests).toHaveLength(0);
    },
  );

  it('lets health probes through without a key only on routes configured for it', async () => {
    const open = await send(base, '/v2/health/ready', { headers: [['host', 'fraud.models.example.com']] });
    expect(open.status).toBe(200);
    const closed = await send(base, '/models/iris/ping');
    expect(closed.status).toBe(401);
    const inferWithoutKey = await send(base, '/v2/models/fraud/infer', { method: 'POST', headers: [['host', 'fraud.models.example.com']] });
    expect(inferWithoutKey.status).toBe(401);
    expect(fraud.requests.map((q) => q.url)).toEqual(['/base/v2/health/ready']);
  });

  it('maps an unreachable model server to 502 and a silent one to 504', async () => {
    const down = await send(base, '/models/down/invocations', { method: 'POST', headers: [['x-api-key', ALL_KEY]] });
    expect(down.status).toBe(502);
    expect(JSON.parse(down.body)).toEqual({ error_code: 'BAD_GATEWAY', message: 'The model server could not be reached' });

    upstream.handler = () => {}; // never answers
    const slow = await send(base, '/models/slow/invocations', { method: 'POST', headers: [['x-api-key', ALL_KEY]] });
    expect(slow.status).toBe(504);
    expect(JSON.parse(slow.body)).toEqual({ error_code: 'GATEWAY_TIMEOUT', message: 'The model server did not answer in time' });
  });

  it('counts requests by route and result, and times them, in the injected registry', async () => {
    const before = await registry.getSingleMetricAsString('flowgate_inference_requests_total');
    const count = (text: string, route: string, result: string) =>
      Number(new RegExp(`flowgate_inference_requests_total\\{route="${route}",result="${result}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    await send(base, '/models/iris/invocations', { method: 'POST', headers: [['x-api-key', IRIS_KEY]] });
    await send(base, '/models/iris/invocations', { method: 'POST' });
    await send(base, '/models/iris/invocations', { method: 'POST', headers: [['x-api-key', 'nope-nope-nope-nope']] });
    await new Promise((r) => setTimeout(r, 20));
    const after = await registry.getSingleMetricAsString('flowgate_inference_requests_total');
    for (const result of ['allowed', 'missing_key', 'wrong_key']) expect(count(after, 'iris', result) - count(before, 'iris', result)).toBe(1);
    const text = await registry.metrics();
    expect(text).toMatch(/flowgate_inference_request_duration_seconds_count\{route="iris"\} \d+/);
    expect(text).not.toMatch(/invocations|nope-nope/); // no paths or keys as labels
  });

  it("keeps the client's hop-by-hop headers, and the headers its Connection names, on the client's hop", async () => {
    const r = await send(base, '/models/iris/invocations', {
      method: 'POST',
      headers: [
        ['x-api-key', IRIS_KEY],
        ['connection', 'keep-alive, x-hop-secret'],
        ['x-hop-secret', 'for the first hop only'],
        ['keep-alive', 'timeout=5'],
        ['te', 'trailers'],
        ['x-end-to-end', 'kept'],
      ],
      body: '{}',
    });
    expect(r.status).toBe(200);
    const headers = upstream.requests[0]!.headers;
    expect(headers['x-end-to-end']).toBe('kept');
    expect(headers['x-hop-secret']).toBeUndefined();
    expect(headers['keep-alive']).toBeUndefined();
    expect(headers.te).toBeUndefined();
  });

  /** Writes raw bytes on one connection and returns everything the gateway answered. */
  const raw = (text: string) =>
    new Promise<string>((resolve) => {
      const s = net.connect(Number(new URL(base).port), '127.0.0.1');
      let out = '';
      s.on('data', (d) => (out += d.toString('latin1')));
      s.on('close', () => resolve(out));
      s.on('error', () => resolve(out));
      s.write(text);
      setTimeout(() => s.end(), 500);
    });

  it('never forwards bytes after an Upgrade request as a request of their own', async () => {
    await raw(
      `GET /models/iris/v2/health/ready HTTP/1.1\r\nHost: x\r\nx-api-key: ${IRIS_KEY}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n` +
        `POST /models/iris/v2/models/x/infer HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`,
    );
    expect(upstream.requests.map((r) => r.url).filter((u) => u.includes('infer'))).toEqual([]);
  });

  it('checks the key of each pipelined HTTP/1.0 keep-alive request', async () => {
    const out = await raw(
      `GET /models/iris/ping HTTP/1.0\r\nConnection: keep-alive\r\nx-api-key: ${IRIS_KEY}\r\n\r\n` +
        `GET /models/iris/v2/models/x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`,
    );
    expect(upstream.requests.map((r) => r.url)).toEqual(['/ping']);
    expect(out).toContain('401');
  });

  it('never logs a presented key, rejected or accepted', async () => {
    await send(base, '/models/iris/invocations', { method: 'POST', headers: [['x-api-key', 'leaked-leaked-leaked']] });
    await send(base, '/models/iris/invocations', { method: 'POST', headers: [['x-api-key', FRAUD_KEY]] });
    await send(base, '/models/iris/invocations', { method: 'POST', headers: [['x-api-key', IRIS_KEY]] });
    const logs = logLines.join('');
    expect(logs).toContain('inference request rejected');
    expect(logs).toContain('"keyId":"fraud-team"');
    for (const secret of ['leaked-leaked', 'leaked', FRAUD_KEY, IRIS_KEY, IRIS_KEY.slice(0, 8)]) expect(logs).not.toContain(secret);
  });
});

describe('inference gateway, a route inside another route', () => {
  const SHARED_KEY = 'shared-key-0123456789abcdef';
  let iris: FakeModelServer;
  let shared: FakeModelServer;
  let gateway: InferenceGateway;
  let server: http.Server;
  let base: string;

  beforeAll(async () => {
    iris = await fakeModelServer();
    shared = await fakeModelServer();
    const config = parseInferenceConfig(`
routes:
  - { name: iris, upstream: "${iris.url}", pathPrefix: /models/iris }
  - { name: shared, upstream: "${shared.url}", pathPrefix: /models }
`);
    const keys = parseKeyFile(
      `keys:
  - { id: iris-team, value: ${IRIS_KEY}, routes: [iris] }
  - { id: shared-team, value: ${SHARED_KEY}, routes: [shared] }
`,
      'keys.yaml',
    );
    gateway = createInferenceGateway({ config, keys: staticKeyStore(keys), registry: new Registry(), logger: createLogger('silent') });
    server = http.createServer((req, res) => {
      if (!gateway.handle(req, res)) res.writeHead(404).end();
    });
    base = await listen(server);
  });

  afterAll(async () => {
    await gateway.close();
    await closeServer(server);
    await iris.close();
    await shared.close();
  });

  beforeEach(() => {
    iris.requests.length = 0;
    shared.requests.length = 0;
  });

  // The shared route's upstream (uvicorn, an ingress normalizing paths) reads %69 as i, so the
  // encoded path is the inner route's path and needs the inner route's key.
  it.each(['/models/iris/v2/models/iris/infer', '/models/%69ris/v2/models/iris/infer', '/models/%69%72%69%73/invocations'])(
    'refuses the outer route key on %s',
    async (path) => {
      const r = await send(base, path, { method: 'POST', headers: [['x-api-key', SHARED_KEY]], body: '{}' });
      expect(r.status).toBe(401);
      expect(shared.requests).toHaveLength(0);
      expect(iris.requests).toHaveLength(0);
    },
  );

  it('forwards the encoded path to the inner route as the path it matched', async () => {
    const r = await send(base, '/models/%69ris/v2/models/iris/infer', { method: 'POST', headers: [['x-api-key', IRIS_KEY]], body: '{}' });
    expect(r.status).toBe(200);
    expect(iris.requests.map((q) => q.url)).toEqual(['/models/iris/v2/models/iris/infer']);
    expect(shared.requests).toHaveLength(0);
  });
});
