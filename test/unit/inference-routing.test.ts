import { describe, expect, it } from 'vitest';
import { parseInferenceConfig } from '../../src/inference/config.js';
import { isHealthProbe, isModelServerMetrics, modelInPath } from '../../src/inference/protocol.js';
import { looseView, normalizeRequestPath } from '../../src/inference/request-path.js';
import { compileRoutes, requestHost } from '../../src/inference/routes.js';

describe('request path normalization', () => {
  it.each([
    ['/v1/models/iris:predict', '/v1/models/iris:predict', ''],
    ['/v2/models/iris/versions/2/infer?x=1&y=%2F', '/v2/models/iris/versions/2/infer', '?x=1&y=%2F'],
    ['//models///iris//invocations', '/models/iris/invocations', ''],
    ['/models/iris/', '/models/iris/', ''],
    ['/', '/', ''],
    ['/a/%7Euser/b', '/a/%7Euser/b', ''],
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
  ])('host %s path %s → %s upstream path %s', (host, path, name, upstreamPath) => {
    const m = table.match(host, path);
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

describe('model-server protocols', () => {
  it.each([
    ['/v1/models/iris:predict', 'iris'],
    ['/v1/models/iris:explain', 'iris'],
    ['/v1/models/iris', 'iris'],
    ['/v2/models/iris/infer', 'iris'],
    ['/v2/models/iris/versions/3/infer', 'iris'],
    ['/v2/models/iris/ready', 'iris'],
    ['/v2/models/iris', 'iris'],
    ['/v2/models/my%20model/infer', 'my model'],
    ['/invocations', undefined],
    ['/v2/health/ready', undefined],
    ['/v2/models/iris/infer/extra', undefined],
  ])('%s names model %s', (path, model) => {
    expect(modelInPath(path)).toBe(model);
  });

  it.each([
    ['GET', '/ping', true],
    ['HEAD', '/health', true],
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
  ])('%s %s is a health probe: %s', (method, path, expected) => {
    expect(isHealthProbe(method, path)).toBe(expected);
  });

  it('recognises the model server metrics endpoint', () => {
    expect(isModelServerMetrics('/metrics')).toBe(true);
    expect(isModelServerMetrics('/metrics/x')).toBe(true);
    expect(isModelServerMetrics('/metricsx')).toBe(false);
  });
});
