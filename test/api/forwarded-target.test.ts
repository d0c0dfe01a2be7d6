import { request as rawRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * MLflow gets the request target flowgate matched and decided on, byte for byte: the upstream URL's
 * own path and MLflow's static prefix in front, the percent-encoding of the normalized path and the
 * client's query string as they were (http-proxy-3 neither re-parses nor re-encodes them).
 */
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let plain: TestFlowgate;
let nested: TestFlowgate;

beforeAll(async () => {
  upstream = await startStubUpstream(() => ({ status: 200, body: {} }));
  plain = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  nested = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: `${upstream.url}/tracking/`, FLOWGATE_UPSTREAM_STATIC_PREFIX: '/mlflow' });
});
afterAll(async () => {
  for (const fg of [plain, nested]) {
    await fg.close();
    removeDir(fg.dir);
  }
  await upstream.close();
});

/** A raw request, so no client library re-encodes the target. */
function get(fg: TestFlowgate, target: string): Promise<number> {
  const u = new URL(fg.url);
  return new Promise((resolve, reject) => {
    const req = rawRequest({ host: u.hostname, port: u.port, path: target, headers: { authorization: adminAuth() } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

async function forwardedUrl(fg: TestFlowgate, target: string): Promise<string> {
  upstream.seen.length = 0;
  expect(await get(fg, target), target).toBe(200);
  const seen = upstream.seen.filter((s) => s.headers['x-forwarded-user'] === 'admin');
  expect(seen).toHaveLength(1);
  return seen[0]!.url;
}

const CASES: Array<[string, string, string]> = [
  ['a plain call', '/api/2.0/mlflow/experiments/get?experiment_id=1', '/api/2.0/mlflow/experiments/get?experiment_id=1'],
  [
    'a query kept as the client wrote it',
    '/api/2.0/mlflow/runs/search?filter=tags.a%3D%27x%27&max_results=5&a=b?c',
    '/api/2.0/mlflow/runs/search?filter=tags.a%3D%27x%27&max_results=5&a=b?c',
  ],
  // A URL parser would percent-encode these quotes in a query: MLflow would decode the same value,
  // but the target would no longer be the one flowgate logged and decided on.
  ["quotes in a query", `/api/2.0/mlflow/runs/search?filter=tags.a='x'&b="y"`, `/api/2.0/mlflow/runs/search?filter=tags.a='x'&b="y"`],
  [
    'an artifact whose name needs escaping',
    '/api/2.0/mlflow-artifacts/artifacts/1/r/artifacts/50%25%20a%3Fb%23c.txt',
    '/api/2.0/mlflow-artifacts/artifacts/1/r/artifacts/50%25%20a%3Fb%23c.txt',
  ],
  ['a normalized path', '//api/2.0/mlflow/x/../experiments/get?experiment_id=1', '/api/2.0/mlflow/experiments/get?experiment_id=1'],
  ['an empty query', '/api/2.0/mlflow/experiments/get?', '/api/2.0/mlflow/experiments/get'],
];

describe('the forwarded request target', () => {
  it.each(CASES)('%s', async (_name, sent, expected) => {
    expect(await forwardedUrl(plain, sent)).toBe(expected);
  });

  it.each(CASES)('%s, under an upstream URL with a path and a static prefix', async (_name, sent, expected) => {
    expect(await forwardedUrl(nested, sent)).toBe(`/tracking/mlflow${expected}`);
  });
});
