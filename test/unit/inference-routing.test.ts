import { describe, expect, it } from 'vitest';
import { parseInferenceConfig } from '../../src/inference/config.js';
import { readModelServerPath } from '../../src/inference/protocol.js';
import { looseView, normalizeRequestPath } from '../../src/inference/request-path.js';
import { compileRoutes, requestHost } from '../../src/inference/routes.js';

describe('request path normalization', () => {
  it.each([
    ['/v1/models/iris:predict', '/v1/models/iris:predict', ''],
    ['/v2/models/iris/versions/2/infer?x=1&y=%2F', '/v2/models/iris/versions/2/infer', '?x=1&y=%2F'],
    ['//models///iris//invocations', '/models/iris/invocations', ''],
    ['/models/iris/', '/models/iris/', ''],
    ['/', '/', ''],
    ['/a/%7Euser/b', '/a/~user/b', ''],
    // Unreserved characters are decoded (every server reads them so); anything else stays encoded.
    ['/models/%69%52is/v2/models/a%20b%C3%A9/infer', '/models/iRis/v2/models/a%20b%C3%A9/infer', ''],
  ])('%s is passed as %s', (url, path, query) => {
    expect(normalizeRequestPath(url)).toEqual({ ok: true, value: { path, query } });
  });

  it.each([
    ['/models/iris/../../api/2.0/mlflow/experiments/get', 'a "." or ".." segment'],
    ['/models/iris/./invocations', 'a "." or ".." segment'],
    ['/models/iris/%2e%2e/x', 'a "." or ".." segment'],
    ['/models/iris/.%2E/x', 'a "." or ".." segment'],
    ['/models%2Firis/invocations', 'an encoded slash'],
    ['/models/iris%5c..%5cx', 'an encoded slash'],
    ['/models/iris%00', 'an encoded slash, backslash or NUL'],
    ['/models\\iris', 'forbidden character'],
    ['/models/iris/%zz', 'malformed percent-encoding'],
    ['/models/iris/metrics;x', '";" (path parameters)'],
    ['/models/iris/v2/models/other;iris/infer', '";" (path parameters)'],
    ['/models/iris/v2/models/other%3Biris/infer', '";" (path parameters)'],
    ['/models/iris/%256detrics', 'percent-encoded twice'],
    ['/models/iris/%252Fx', 'percent-encoded twice'],
    ['/models/iris/v2/models/a%0Ab/infer', 'encoded control character'],
    ['/models/iris/v2/models/a%3Fb/infer', 'encoded control character, "?"'],
    ['/models/iris/v2/models/a%23b/infer', 'encoded control character, "?" or "#"'],
    ['http://evil.example.com/models/iris', 'absolute path'],
    ['*', 'absolute path'],
  ])('%s is refused (%s)', (url, reason) => {
    const r = normalizeRequestPath(url);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.reason).toContain(reason);
  });

  it('gives a loose view of refused paths for claiming them', () => {
    expect(looseView('/models%2Firis/x?q')).toBe('/models/iris/x');
    expect(looseView('//models\\iris')).toBe('/models/iris');
  });
});

const config = parseInferenceConfig(`
routes:
  - { name: iris, upstream: "http://127.0.0.1:1", pathPrefix: /models/iris, stripPrefix: true }
  - { name: iris-canary, upstream: "http://127.0.0.1:2", pathPrefix: /models/iris/canary, stripPrefix: true }
  - { name: kept, upstream: "http://127.0.0.1:3", pathPrefix: /serving }
  - { name: by-host, upstream: "http://127.0.0.1:4", hosts: [fraud.models.example.com] }
  - { name: host-and-prefix, upstream: "http://127.0.0.1:5", hosts: [fraud.models.example.com], pathPrefix: /models/iris }
`);
const table = compileRoutes(config);

describe('route matching', () => {
  it.each([
    [undefined, '/models/iris/invocations', 'iris', '/invocations'],
    [undefined, '/models/iris', 'iris', '/'],
    [undefined, '/models/iris/canary/v2/models/iris/infer', 'iris-canary', '/v2/models/iris/infer'],
    [undefined, '/serving/v1/models/x:predict', 'kept', '/serving/v1/models/x:predict'],
    ['fraud.models.example.com', '/invocations', 'by-host', '/invocations'],
    ['fraud.models.example.com', '/models/iris/invocations', 'host-and-prefix', '/models/iris/invocations'],
    ['tracking.example.com', '/models/iris/ping', 'iris', '/ping'],
    // Servers behind read %69 as i: the path is matched and forwarded as /models/iris/canary/…
    [undefined, '/models/%69ris/invocations', 'iris', '/invocations'],
    [undefined, '/models/iris/c%61nary/invocations', 'iris-canary', '/invocations'],
  ])('host %s path %s → %s upstream path %s', (host, url, name, upstreamPath) => {
    const normalized = normalizeRequestPath(url);
    if (!normalized.ok) throw new Error(normalized.reason);
    const m = table.match(host, normalized.value.path);
    expect(m?.route.name).toBe(name);
    expect(m?.upstreamPath).toBe(upstreamPath);
  });

  it.each([
    [undefined, '/models/iris2/invocations'],
    [undefined, '/api/2.0/mlflow/experiments/get'],
    [undefined, '/'],
    ['other.example.com', '/invocations'],
  ])('host %s path %s is left to tracking', (host, path) => {
    expect(table.match(host, path)).toBeUndefined();
  });

  it('reads the Host header without port, case or trailing dot', () => {
    expect(requestHost('Fraud.Models.Example.com.:8443')).toBe('fraud.models.example.com');
    expect(requestHost('[::1]:8080')).toBe('[::1]');
    expect(requestHost(undefined)).toBeUndefined();
  });

  it('claims refused paths aimed at a route, and only those', () => {
    expect(table.claims(undefined, '/models/iris/x')?.name).toBe('iris');
    expect(table.claims('fraud.models.example.com', '/anything')?.name).toBe('by-host');
    expect(table.claims('fraud.models.example.com', '/models/iris/x')?.name).toBe('host-and-prefix');
    expect(table.claims(undefined, '/api/2.0/mlflow/x')).toBeUndefined();
  });
});

type Kind = ReturnType<typeof readModelServerPath>['kind'];

describe('model-server paths, read as the model server reads them', () => {
  it.each([
    ['POST', '/v1/models/iris:predict', 'iris'],
    ['POST', '/v1/models/iris:explain', 'iris'],
    ['POST', '/v1/models/iris:predict/', 'iris'],
    ['POST', '/v1/models/iris%3Apredict', 'iris'],
    ['GET', '/v1/models/iris', 'iris'],
    ['GET', '/v1/models/iris/', 'iris'],
    ['POST', '/v2/models/iris/infer', 'iris'],
    ['POST', '/v2/models/iris/infer/', 'iris'],
    ['POST', '/v2/models/iris/versions/3/infer', 'iris'],
    ['POST', '/v2/models/iris/versions/1/infer/', 'iris'],
    ['POST', '/v2/models/iris/generate_stream', 'iris'],
    ['GET', '/v2/models/iris/ready', 'iris'],
    ['GET', '/v2/models/iris', 'iris'],
    ['GET', '/v2/models/iris/versions/2', 'iris'],
    ['POST', '/v2/models/my%20model/infer', 'my model'],
    ['POST', '/v2/models/%69ris/infer', 'iris'],
    ['POST', '/v2/models/IRIS/infer', 'IRIS'],
    ['GET', '/v2/models/other/versions/infer', 'other'],
  ])('%s %s acts on model %s', (method, path, model) => {
    expect(readModelServerPath(method, path)).toMatchObject({ kind: 'model', model });
  });

  it.each([
    ['POST', '/invocations'],
    ['POST', '/invocations/'],
    ['POST', '/%69nvocations'],
    ['GET', '/ping'],
    ['GET', '/health'],
    ['GET', '/version'],
    ['GET', '/v2'],
    ['GET', '/v2/health/ready'],
    ['GET', '/v2/health/live/'],
  ])('%s %s names no model: the route model stands for it', (method, path) => {
    expect(readModelServerPath(method, path).kind).toBe('server');
  });

  // Every one of these was once charged to the route's default model.
  it.each([
    ['GET', '/v2/models/other/stats'],
    ['GET', '/v2/models/other/versions/1/stats'],
    ['GET', '/v2/models/stats'],
    ['GET', '/v2/models/other/config'],
    ['POST', '/v2/repository/models/other/load'],
    ['POST', '/v2/repository/models/other/unload'],
    ['POST', '/v2/repository/index'],
    ['POST', '/v1/models/other:PREDICT'],
    ['POST', '/v1/models/other:Predict/'],
    ['POST', '/v1/models/a:b:predict'],
    ['POST', '/v1/models/:predict'],
    ['POST', '/v1/models/other:predict/extra'],
    ['GET', '/v1/models/other:predict'],
    ['GET', '/v1/models'],
    ['POST', '/v2/models/other/infer/extra'],
    ['POST', '/v2/models/other/versions/'],
    ['POST', '/V2/models/other/infer'],
    ['POST', '/v2/Models/other/infer'],
    ['POST', '/v2/models/other/INFER'],
    ['POST', '/Invocations'],
    ['POST', '/openai/v1/chat/completions'],
    ['GET', '/'],
    ['GET', '/docs'],
    ['GET', '/anything'],
  ])('%s %s is unknown: no model can be charged for it', (method, path) => {
    expect(readModelServerPath(method, path).kind).toBe('unknown');
  });

  it.each([
    '/metrics',
    '/metrics/',
    '/metrics/x',
    '/%6detrics',
    '/%6D%65%74%72%69%63%73',
    '/Metrics',
    '/METRICS/',
    '/m%45trics',
  ])('%s is the server metrics endpoint', (path) => {
    expect(readModelServerPath('GET', path).kind).toBe('metrics');
  });

  it('finds /metrics below a prefix that is forwarded rather than stripped', () => {
    expect(readModelServerPath('GET', '/serving/Metrics', '/serving').kind).toBe('metrics');
    expect(readModelServerPath('GET', '/serving/metricsx', '/serving').kind).toBe('unknown');
    expect(readModelServerPath('GET', '/metricsx').kind).toBe('unknown');
  });

  it.each([
    ['GET', '/ping', true],
    ['HEAD', '/health', true],
    ['GET', '/%70ing', true],
    ['GET', '/ping/', true],
    ['GET', '/v2/health/live', true],
    ['GET', '/v2/health/ready', true],
    ['GET', '/v2/models/iris/ready', true],
    ['GET', '/v2/models/iris/versions/1/ready', true],
    ['GET', '/v1/models/iris', true],
    ['POST', '/ping', false],
    ['POST', '/invocations', false],
    ['POST', '/v1/models/iris:predict', false],
    ['GET', '/version', false],
    ['GET', '/v2/models/iris', false],
    ['GET', '/PING', false],
  ])('%s %s is a health probe: %s', (method, path, expected) => {
    const read = readModelServerPath(method, path);
    expect(read.kind !== 'metrics' && read.kind !== 'unknown' && read.health).toBe(expected);
  });

  it('recognises nothing it does not list', () => {
    const kinds = new Set<Kind>(['/x', '/v3/models/a/infer', '/v2/models//infer'].map((p) => readModelServerPath('POST', p).kind));
    expect([...kinds]).toEqual(['unknown']);
  });
});
