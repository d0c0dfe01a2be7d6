import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { traceFormOf } from '../../src/authz/trace-info-forms.js';
import { FlowgateError } from '../../src/errors.js';
import { connectMlflow, type MlflowConnection } from '../../src/upstream/mlflow-connection.js';
import { createUpstreamJson } from '../../src/upstream/json-client.js';
import { readMlflowVersion } from '../../src/upstream/mlflow-version.js';

/**
 * A loopback stand-in for MLflow whose routes follow its version: 3.0.x has only the v2 trace info
 * route and answers Flask's HTML 404 for the v3 one.
 */
const mlflow = {
  version: '3.0.1' as string | undefined,
  v3: false,
  v2: true,
  /** Connections are cut, as when MLflow is restarting. */
  down: false,
};
const hits: string[] = [];
let server: Server;
let baseUrl: string;

const FLASK_404 = '<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>';

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function handle(req: IncomingMessage, res: ServerResponse) {
  if (mlflow.down) return void req.socket.destroy();
  const path = new URL(req.url ?? '/', 'http://x').pathname;
  hits.push(path);
  if (path === '/version' && mlflow.version) {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    return void res.end(mlflow.version);
  }
  const v3 = /^\/api\/3\.0\/mlflow\/traces\/([^/]+)$/.exec(path);
  if (v3 && mlflow.v3) {
    if (v3[1] === 'tr-gone') return json(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no trace' });
    return json(res, 200, { trace: { trace_info: { trace_id: v3[1], trace_location: { type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: '31' } } } } });
  }
  const v2 = /^\/api\/2\.0\/mlflow\/traces\/([^/]+)\/info$/.exec(path);
  if (v2 && mlflow.v2) {
    if (v2[1] === 'tr-gone') return json(res, 404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no trace' });
    return json(res, 200, { trace_info: { request_id: v2[1], experiment_id: '22' } });
  }
  res.writeHead(404, { 'content-type': 'text/html; charset=utf-8' });
  res.end(FLASK_404);
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

let connection: MlflowConnection;
beforeEach(() => {
  Object.assign(mlflow, { version: '3.0.1', v3: false, v2: true, down: false });
  hits.length = 0;
  connection = connectMlflow({ upstreamUrl: baseUrl, staticPrefix: '', timeoutMs: 5_000 });
});
afterEach(() => connection.close());

function lookups(withVersion = true, mlflowVersion?: string) {
  return createMlflowLookups({
    client: createUpstreamJson(connection),
    cacheSize: 100,
    ttlMs: 60_000,
    ...(withVersion ? { readVersion: () => readMlflowVersion(connection) } : {}),
    ...(mlflowVersion ? { mlflowVersion } : {}),
  });
}

async function errorOf(promise: Promise<unknown>): Promise<FlowgateError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(FlowgateError);
  return error as FlowgateError;
}

const traceHits = () => hits.filter((h) => h.includes('/traces/'));

describe('trace look-ups follow the MLflow version', () => {
  it('reads the form from /version: MLflow 3.0.x is asked the v2 route, and only that', async () => {
    const api = lookups();
    const started = Date.now();
    expect(await api.experimentOfTrace('tr-a')).toBe('22');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(hits).toEqual(['/version', '/api/2.0/mlflow/traces/tr-a/info']);
  });

  it('uses the version read at start without reading it again', async () => {
    const api = lookups(true, '3.0.1');
    expect(await api.experimentOfTrace('tr-a')).toBe('22');
    expect(hits).toEqual(['/api/2.0/mlflow/traces/tr-a/info']);
  });

  it('asks a newer MLflow the v3 route', async () => {
    mlflow.version = '3.17.2';
    mlflow.v3 = true;
    const api = lookups();
    expect(await api.experimentOfTrace('tr-a')).toBe('31');
    expect(traceHits()).toEqual(['/api/3.0/mlflow/traces/tr-a']);
  });

  it("falls back on Flask's HTML 404 when the version is not known, and remembers", async () => {
    mlflow.version = undefined;
    const api = lookups();
    const started = Date.now();
    expect(await api.experimentOfTrace('tr-a')).toBe('22');
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await api.experimentOfTrace('tr-b')).toBe('22');
    expect(traceHits()).toEqual(['/api/3.0/mlflow/traces/tr-a', '/api/2.0/mlflow/traces/tr-a/info', '/api/2.0/mlflow/traces/tr-b/info']);
  });

  it('without a version reader, tries v3 first and falls back the same way', async () => {
    const api = lookups(false);
    expect(await api.experimentOfTrace('tr-a')).toBe('22');
    expect(hits).toEqual(['/api/3.0/mlflow/traces/tr-a', '/api/2.0/mlflow/traces/tr-a/info']);
  });

  it('follows MLflow when /version is wrong about the route: a 3.17 without v3 is asked v2', async () => {
    mlflow.version = '3.17.2';
    const api = lookups();
    expect(await api.experimentOfTrace('tr-a')).toBe('22');
    expect(await api.experimentOfTrace('tr-b')).toBe('22');
    expect(traceHits()).toEqual(['/api/3.0/mlflow/traces/tr-a', '/api/2.0/mlflow/traces/tr-a/info', '/api/2.0/mlflow/traces/tr-b/info']);
  });

  it('tells a missing trace (JSON RESOURCE_DOES_NOT_EXIST) from a missing route, and keeps the form', async () => {
    mlflow.version = '3.17.2';
    mlflow.v3 = true;
    const api = lookups();
    const missing = await errorOf(api.experimentOfTrace('tr-gone'));
    expect([missing.status, missing.code]).toEqual([404, 'RESOURCE_DOES_NOT_EXIST']);
    expect(traceHits()).toEqual(['/api/3.0/mlflow/traces/tr-gone']);
  });

  it('answers a look-up no route can make with a quick 404 the MLflow client does not retry, never a 503', async () => {
    mlflow.v2 = false;
    const api = lookups();
    const started = Date.now();
    const error = await errorOf(api.experimentOfTrace('tr-a'));
    expect(Date.now() - started).toBeLessThan(1_000);
    expect([error.status, error.code]).toEqual([404, 'ENDPOINT_NOT_FOUND']);
    expect(error.message).toMatch(/has no GET \/api\/3\.0\/mlflow\/traces\/tr-a or GET \/api\/2\.0\/mlflow\/traces\/tr-a\/info/);
    // Other look-ups MLflow lacks are the same quick 404.
    const issue = await errorOf(api.experimentOfOwned('issue', 'i-1'));
    expect([issue.status, issue.code]).toEqual([404, 'ENDPOINT_NOT_FOUND']);
  });

  it('reads /version again after MLflow was unreachable, and follows an upgrade', async () => {
    const api = lookups();
    expect(await api.experimentOfTrace('tr-a')).toBe('22');
    mlflow.down = true;
    expect((await errorOf(api.experimentOfTrace('tr-b'))).status).toBe(503);
    Object.assign(mlflow, { down: false, version: '3.17.2', v3: true, v2: false });
    hits.length = 0;
    expect(await api.experimentOfTrace('tr-c')).toBe('31');
    expect(hits).toEqual(['/version', '/api/3.0/mlflow/traces/tr-c']);
  });
});

describe('traceFormOf', () => {
  it.each([
    ['3.17.2', 'v3'],
    ['3.1.0', 'v3'],
    ['4.0.0rc1', 'v3'],
    ['3.0.1', 'v2'],
    ['2.22.0', 'v2'],
    [undefined, undefined],
    ['nonsense', undefined],
  ])('%s → %s', (version, form) => {
    expect(traceFormOf(version)).toBe(form);
  });
});
