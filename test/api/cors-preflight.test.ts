import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { eventually, scrape, sum } from '../helpers/prom.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;

beforeAll(async () => {
  upstream = await startStubUpstream(() => ({ status: 200, body: {} }));
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_SKIP_AUTH_PREFLIGHT: 'true', FLOWGATE_BASE_PATH: '/mlflow' });
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const ORIGIN = 'https://dashboard.example';
/** flowgate serves MLflow under FLOWGATE_BASE_PATH. */
const mlflowBase = () => `${fg.url}/mlflow`;
const ROUTE = '/api/2.0/mlflow/runs/get';

describe('FLOWGATE_SKIP_AUTH_PREFLIGHT', () => {
  it('is off unless set, and takes only a boolean', () => {
    expect(loadConfig({}).skipAuthPreflight).toBe(false);
    expect(loadConfig({ FLOWGATE_SKIP_AUTH_PREFLIGHT: 'true' }).skipAuthPreflight).toBe(true);
    expect(() => loadConfig({ FLOWGATE_SKIP_AUTH_PREFLIGHT: 'sometimes' })).toThrow(/FLOWGATE_SKIP_AUTH_PREFLIGHT/);
  });

  it('hands a preflight to MLflow as a preflight: no identity, flowgate cookies dropped, under the upstream path', async () => {
    const before = upstream.seen.length;
    const answer = await request(mlflowBase())
      .options(`${ROUTE}?run_id=abc`)
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'GET')
      .set('Access-Control-Request-Headers', 'authorization')
      .set('X-Forwarded-User', 'admin')
      .set('Cookie', 'flowgate_session=secret-session; theme=dark');
    expect(answer.status).toBe(200);
    const seen = upstream.seen.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.method).toBe('OPTIONS');
    expect(seen[0]!.url).toBe(`${ROUTE}?run_id=abc`);
    expect(seen[0]!.headers.origin).toBe(ORIGIN);
    expect(seen[0]!.headers['access-control-request-method']).toBe('GET');
    expect(seen[0]!.headers['x-forwarded-user']).toBeUndefined();
    expect(seen[0]!.headers.cookie).toBe('theme=dark');
  });

  it('counts it as an allow for the announced route, and logs it without a user', async () => {
    const before = (await scrape(fg.metricsUrl)).samples;
    const answer = await request(mlflowBase())
      .options(ROUTE)
      .set('Origin', ORIGIN)
      .set('Access-Control-Request-Method', 'GET')
      .set('X-Request-Id', 'preflight-line-1');
    expect(answer.status).toBe(200);
    const labels = { decision: 'allow', reason: 'cors-preflight', resource_type: 'none', route: ROUTE };
    await eventually(async () => {
      const after = (await scrape(fg.metricsUrl)).samples;
      expect(sum(after, 'flowgate_authz_decisions_total', labels) - sum(before, 'flowgate_authz_decisions_total', labels)).toBe(1);
      expect(sum(after, 'flowgate_authn_attempts_total') - sum(before, 'flowgate_authn_attempts_total')).toBe(0);
    });
    await eventually(() => {
      const line = fg.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.requestId === 'preflight-line-1');
      expect(line).toMatchObject({ method: 'OPTIONS', route: ROUTE, decision: 'allow', reason: 'cors-preflight', status: 200, upstreamStatus: 200 });
      expect(line!.user).toBeUndefined();
    });
  });

  it('answers anything else that is not a preflight of an MLflow route like any unauthenticated request', async () => {
    const before = upstream.seen.length;
    const notPreflights = [
      request(mlflowBase()).options(ROUTE).set('Origin', ORIGIN),
      request(mlflowBase()).options(ROUTE).set('Access-Control-Request-Method', 'GET'),
      request(mlflowBase()).options(ROUTE).set('Origin', ORIGIN).set('Access-Control-Request-Method', 'get'),
      request(mlflowBase()).options(ROUTE).set('Origin', ORIGIN).set('Access-Control-Request-Method', 'OPTIONS'),
      request(mlflowBase()).options('/api/2.0/mlflow/no-such-call').set('Origin', ORIGIN).set('Access-Control-Request-Method', 'GET'),
      request(mlflowBase()).options('/api/2.0/mlflow/users/create').set('Origin', ORIGIN).set('Access-Control-Request-Method', 'POST'),
      request(mlflowBase()).get(ROUTE).set('Origin', ORIGIN).set('Access-Control-Request-Method', 'GET'),
    ];
    for (const r of notPreflights) {
      const answer = await r;
      expect(answer.status).toBe(401);
      expect(answer.body.error_code).toBe('UNAUTHENTICATED');
    }
    // Outside the base path nothing is MLflow's.
    const outside = await request(fg.url).options(ROUTE).set('Origin', ORIGIN).set('Access-Control-Request-Method', 'GET');
    expect(outside.status).toBe(404);
    expect(upstream.seen.length).toBe(before);
  });
});
