import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * A corpus of request-target tricks aimed at resources the caller may not touch: none may reach
 * MLflow. Forwarded requests carry `X-Forwarded-User`; flowgate's own look-ups do not.
 */
let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let eve = '';

beforeAll(async () => {
  upstream = await startStubUpstream((r) => {
    if (r.url.startsWith('/api/2.0/mlflow/runs/get')) {
      const runId = new URL(r.url, 'http://x').searchParams.get('run_id');
      const exp = runId === 'r-open' ? '1' : runId === 'r-secret' ? '2' : runId === 'r-mine' ? '3' : undefined;
      return exp ? { status: 200, body: { run: { info: { run_id: runId, experiment_id: exp } } } } : { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST' } };
    }
    if (r.url.startsWith('/api/2.0/mlflow/logged-models/m-')) {
      const exp = r.url.includes('m-open') ? '1' : r.url.includes('m-mine') ? '3' : '2';
      return { status: 200, body: { model: { info: { model_id: 'm', experiment_id: exp } } } };
    }
    const dataset = /^\/api\/3\.0\/mlflow\/datasets\/(d-[a-z]+)\/experiment-ids$/.exec(r.url);
    if (dataset) return { status: 200, body: { experiment_ids: { 'd-mine': ['3'], 'd-mixed': ['3', '2'], 'd-orphan': [] }[dataset[1]!] ?? ['2'] } };
    if (r.url.startsWith('/api/3.0/mlflow/traces/tr-')) {
      const exp = r.url.includes('tr-open') ? '1' : r.url.includes('tr-mine') ? '3' : '2';
      return { status: 200, body: { trace: { trace_info: { trace_location: { mlflow_experiment: { experiment_id: exp } } } } } };
    }
    return { status: 200, body: {} };
  });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  const api = request(fg.url);
  await api.post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'eve' });
  await api.post('/api/2.0/mlflow/permissions/users/eve/experiments/1').set('Authorization', adminAuth()).send({ permission: 'READ' });
  await api.post('/api/2.0/mlflow/permissions/users/eve/experiments/3').set('Authorization', adminAuth()).send({ permission: 'EDIT' });
  await api.post('/api/2.0/mlflow/permissions/users/eve/prompts/p-readable').set('Authorization', adminAuth()).send({ permission: 'READ' });
  eve = (
    await api
      .patch('/api/2.0/mlflow/permissions/users/access-token')
      .set('Authorization', adminAuth())
      .send({ username: 'eve', expiration: new Date(Date.now() + 86_400_000).toISOString() })
  ).body.token;
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

type Trick = { method: 'GET' | 'POST' | 'HEAD' | 'DELETE' | 'PUT'; path: string; body?: object };

const GET_EXP2 = (p: string): Trick => ({ method: 'GET', path: p });
const CORPUS: Array<[string, Trick]> = [
  // reading experiment 2 (no grant)
  ['plain', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=2')],
  ['ajax twin', GET_EXP2('/ajax-api/2.0/mlflow/experiments/get?experiment_id=2')],
  ['HEAD', { method: 'HEAD', path: '/api/2.0/mlflow/experiments/get?experiment_id=2' }],
  ['duplicate slashes', GET_EXP2('//api//2.0//mlflow//experiments//get?experiment_id=2')],
  ['dot segment', GET_EXP2('/api/2.0/mlflow/x/../experiments/get?experiment_id=2')],
  ['encoded dot segment', GET_EXP2('/api/2.0/mlflow/x/%2e%2e/experiments/get?experiment_id=2')],
  ['mixed-case encoded dots', GET_EXP2('/api/2.0/mlflow/x/%2E%2e/experiments/get?experiment_id=2')],
  ['dot-encoded-dot', GET_EXP2('/api/2.0/mlflow/x/.%2e/experiments/get?experiment_id=2')],
  ['single dot', GET_EXP2('/api/2.0/mlflow/./experiments/./get?experiment_id=2')],
  ['encoded slash', GET_EXP2('/api/2.0/mlflow%2Fexperiments%2Fget?experiment_id=2')],
  ['lower-case encoded slash', GET_EXP2('/api/2.0/mlflow%2fexperiments%2fget?experiment_id=2')],
  ['double-encoded slash', GET_EXP2('/api/2.0/mlflow%252Fexperiments%252Fget?experiment_id=2')],
  ['double-encoded dot', GET_EXP2('/api/2.0/mlflow/x/%252e%252e/experiments/get?experiment_id=2')],
  ['backslash', GET_EXP2('/api\\2.0\\mlflow\\experiments\\get?experiment_id=2')],
  ['encoded backslash', GET_EXP2('/api/2.0/mlflow%5Cexperiments%5Cget?experiment_id=2')],
  ['semicolon parameter', GET_EXP2('/api/2.0/mlflow/experiments/get;jsessionid=1?experiment_id=2')],
  ['encoded semicolon', GET_EXP2('/api/2.0/mlflow/experiments/get%3Bx?experiment_id=2')],
  ['upper-case prefix', GET_EXP2('/API/2.0/mlflow/experiments/get?experiment_id=2')],
  ['mixed-case segment', GET_EXP2('/api/2.0/MLflow/experiments/get?experiment_id=2')],
  ['trailing slash', GET_EXP2('/api/2.0/mlflow/experiments/get/?experiment_id=2')],
  ['trailing space', GET_EXP2('/api/2.0/mlflow/experiments/get%20?experiment_id=2')],
  ['trailing NUL', GET_EXP2('/api/2.0/mlflow/experiments/get%00?experiment_id=2')],
  ['trailing tab', GET_EXP2('/api/2.0/mlflow/experiments/get%09?experiment_id=2')],
  ['trailing extension', GET_EXP2('/api/2.0/mlflow/experiments/get.json?experiment_id=2')],
  ['overlong utf-8 slash', GET_EXP2('/api/2.0/mlflow%c0%afexperiments/get?experiment_id=2')],
  ['fullwidth slash', GET_EXP2('/api/2.0/mlflow%EF%BC%8Fexperiments%EF%BC%8Fget?experiment_id=2')],
  ['fragment', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=2#x')],
  ['query that names an allowed path', GET_EXP2('/api/2.0/mlflow/experiments/get?x=/api/2.0/mlflow/experiments/get&experiment_id=2')],
  ['repeated id, allowed first', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=1&experiment_id=2')],
  ['repeated id, allowed last', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=2&experiment_id=1')],
  ['camelCase twin of the id', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=1&experimentId=2')],
  ['padded id', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=%202')],
  ['plus-signed id', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=%2B2')],
  ['zero-padded id', GET_EXP2('/api/2.0/mlflow/experiments/get?experiment_id=02')],
  ['GET with a body naming another id', { method: 'GET', path: '/api/2.0/mlflow/experiments/get', body: { experiment_id: '2' } }],
  // runs: resolved through a look-up
  ['secret run', GET_EXP2('/api/2.0/mlflow/runs/get?run_id=r-secret')],
  ['run_id vs run_uuid', GET_EXP2('/api/2.0/mlflow/runs/get?run_id=r-open&run_uuid=r-secret')],
  ['run_uuid alone', GET_EXP2('/api/2.0/mlflow/runs/get?run_uuid=r-secret')],
  ['unknown run', GET_EXP2('/api/2.0/mlflow/runs/get?run_id=r-missing')],
  ['log to a readable run (needs EDIT)', { method: 'POST', path: '/api/2.0/mlflow/runs/log-metric', body: { run_id: 'r-open', key: 'k', value: 1, timestamp: 1, step: 0 } }],
  ['query and body disagree', { method: 'POST', path: '/api/2.0/mlflow/runs/log-metric?run_id=r-open', body: { run_id: 'r-secret', key: 'k', value: 1, timestamp: 1 } }],
  // a second resource in the same request (eve may edit experiment 3, nothing on 2)
  ['metric on my run, attached to a secret logged model', { method: 'POST', path: '/api/2.0/mlflow/runs/log-metric', body: { run_id: 'r-mine', key: 'k', value: 1, timestamp: 1, model_id: 'm-secret' } }],
  ['inputs of my run naming a secret logged model', { method: 'POST', path: '/api/2.0/mlflow/runs/log-inputs', body: { run_id: 'r-mine', models: [{ model_id: 'm-secret' }] } }],
  ['outputs of my run naming a secret logged model', { method: 'POST', path: '/api/2.0/mlflow/runs/outputs', body: { run_id: 'r-mine', models: [{ model_id: 'm-secret', step: 0 }] } }],
  ['a batch on my run with one metric attached to a secret logged model', {
    method: 'POST',
    path: '/api/2.0/mlflow/runs/log-batch',
    body: { run_id: 'r-mine', metrics: [{ key: 'a', value: 1, timestamp: 1, step: 0, model_id: 'm-mine-1' }, { key: 'b', value: 1, timestamp: 1, step: 0, model_id: 'm-secret' }] },
  }],
  ['a batch on my run attached to a logged model I may only read', {
    method: 'POST',
    path: '/api/2.0/mlflow/runs/log-batch',
    body: { run_id: 'r-mine', metrics: [{ key: 'a', value: 1, timestamp: 1, step: 0, modelId: 'm-open' }] },
  }],
  ['linking an unreadable prompt to my trace', {
    method: 'POST',
    path: '/api/2.0/mlflow/traces/link-prompts',
    body: { trace_id: 'tr-mine', prompt_versions: [{ name: 'p-readable', version: '1' }, { name: 'p-secret', version: '2' }] },
  }],
  ['a dataset that also belongs to a secret experiment', GET_EXP2('/api/3.0/mlflow/datasets/d-mixed')],
  ['a dataset of no experiment', GET_EXP2('/api/3.0/mlflow/datasets/d-orphan/records')],
  ['attaching my dataset to a secret experiment', { method: 'POST', path: '/api/3.0/mlflow/datasets/d-mine/add-experiments', body: { experiment_ids: ['2'] } }],
  ['deleting my dataset with EDIT only', { method: 'DELETE', path: '/api/3.0/mlflow/datasets/d-mine' }],
  ['linking secret traces to my run', { method: 'POST', path: '/api/2.0/mlflow/traces/link-to-run', body: { run_id: 'r-mine', trace_ids: ['tr-secret'] } }],
  // deleting (needs MANAGE; eve has READ on 1)
  ['delete readable experiment', { method: 'POST', path: '/api/2.0/mlflow/experiments/delete', body: { experiment_id: '1' } }],
  ['delete via encoded path', { method: 'POST', path: '/api/2.0/mlflow/experiments%2Fdelete', body: { experiment_id: '1' } }],
  ['delete with dot segments', { method: 'POST', path: '/api/2.0/mlflow/experiments/get/../delete', body: { experiment_id: '1' } }],
  // artifacts of experiment 2
  ['artifact download', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts/2/r-secret/artifacts/secret.txt')],
  ['artifact climb from readable', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts/1/../2/r-secret/artifacts/secret.txt')],
  ['artifact encoded climb', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts/1/%2e%2e/2/r-secret/artifacts/secret.txt')],
  ['artifact encoded slash climb', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts/1%2F..%2F2/r-secret/artifacts/secret.txt')],
  ['artifact doubled slash', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts//2/r-secret/artifacts/secret.txt')],
  ['artifact list of 2', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts?path=2/r-secret/artifacts')],
  ['artifact list climbing', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts?path=1/../2/r-secret')],
  ['artifact HEAD', { method: 'HEAD', path: '/api/2.0/mlflow-artifacts/artifacts/2/r-secret/artifacts/secret.txt' }],
  ['artifact upload to readable (needs EDIT)', { method: 'PUT', path: '/api/2.0/mlflow-artifacts/artifacts/1/r-open/artifacts/x.txt' }],
  ['artifact delete', { method: 'DELETE', path: '/api/2.0/mlflow-artifacts/artifacts/1/r-open/artifacts/x.txt' }],
  ['presigned of 2', GET_EXP2('/api/2.0/mlflow-artifacts/presigned/2/r-secret/artifacts/secret.txt')],
  ['get-artifact secret run', GET_EXP2('/get-artifact?run_id=r-secret&path=secret.txt')],
  // MLflow runs without workspaces here: a `workspaces/` prefix names no experiment, even before one eve may read
  ['artifact under a workspace prefix, workspaces off', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts/workspaces/default/1/r-open/artifacts/x.txt')],
  ['artifact list of the workspace directories, workspaces off', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts?path=workspaces')],
  ['artifact list of a workspace directory, workspaces off', GET_EXP2('/api/2.0/mlflow-artifacts/artifacts?path=workspaces/default/1')],
  ['get-artifact alias', GET_EXP2('/get-artifact?run_uuid=r-secret&path=secret.txt')],
  // admin-only and unknown
  ['admin API', GET_EXP2('/api/2.0/mlflow/permissions/users')],
  ['admin API via ajax and dots', GET_EXP2('/ajax-api/2.0/mlflow/x/../permissions/users')],
  ['admin API encoded', GET_EXP2('/api/2.0/mlflow%2Fpermissions%2Fusers')],
  ['webhooks', GET_EXP2('/api/2.0/mlflow/webhooks')],
  ['unknown API route', GET_EXP2('/api/2.0/mlflow/experiments/get-everything')],
  ['unknown version', GET_EXP2('/api/9.9/mlflow/experiments/get?experiment_id=2')],
  ['graphql', { method: 'POST', path: '/graphql', body: { query: '{ mlflowGetExperiment(input: {experimentId: "2"}) { experiment { name } } }' } }],
  ['absolute-form target', GET_EXP2('http://127.0.0.1/api/2.0/mlflow/experiments/get?experiment_id=2')],
];

describe('path tricks', () => {
  it('has at least 50 cases', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(50);
  });

  it.each(CORPUS)('%s: refused, and MLflow never sees it', async (_name, t) => {
    upstream.seen.length = 0;
    const res = await new Promise<{ status: number }>((resolve, reject) => {
      // a raw request, so no client library re-normalizes the target
      import('node:http').then(({ request: raw }) => {
        const body = t.body ? JSON.stringify(t.body) : undefined;
        const u = new URL(fg.url);
        const req = raw(
          {
            host: u.hostname,
            port: u.port,
            method: t.method,
            path: t.path,
            headers: {
              authorization: basic('eve', eve),
              ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}),
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
          },
        );
        req.on('error', reject);
        req.end(body);
      }, reject);
    });
    expect(res.status, `${t.method} ${t.path}`).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(upstream.seen.filter((s) => s.headers['x-forwarded-user'] !== undefined)).toEqual([]);
  });

  it('the same caller is allowed the legitimate form (the corpus is not denying everything)', async () => {
    upstream.seen.length = 0;
    const ok = await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=1').set('Authorization', basic('eve', eve));
    expect(ok.status).toBe(200);
    const run = await request(fg.url).get('/api/2.0/mlflow/runs/get?run_id=r-open').set('Authorization', basic('eve', eve));
    expect(run.status).toBe(200);
    const metric = await request(fg.url)
      .post('/api/2.0/mlflow/runs/log-metric')
      .set('Authorization', basic('eve', eve))
      .send({ run_id: 'r-mine', key: 'k', value: 1, timestamp: 1 });
    expect(metric.status).toBe(200);
    // Second resources that check out: several logged models (all in experiment 3), a readable prompt.
    const batch = await request(fg.url)
      .post('/api/2.0/mlflow/runs/log-batch')
      .set('Authorization', basic('eve', eve))
      .send({ run_id: 'r-mine', metrics: [{ key: 'a', value: 1, timestamp: 1, step: 0, model_id: 'm-mine-1' }, { key: 'b', value: 1, timestamp: 1, step: 0, model_id: 'm-mine-2' }] });
    expect(batch.status).toBe(200);
    const inputs = await request(fg.url)
      .post('/api/2.0/mlflow/runs/log-inputs')
      .set('Authorization', basic('eve', eve))
      .send({ run_id: 'r-mine', models: [{ model_id: 'm-mine-1' }, { model_id: 'm-mine-2' }] });
    expect(inputs.status).toBe(200);
    const linked = await request(fg.url)
      .post('/api/2.0/mlflow/traces/link-prompts')
      .set('Authorization', basic('eve', eve))
      .send({ trace_id: 'tr-mine', prompt_versions: [{ name: 'p-readable', version: '1' }] });
    expect(linked.status).toBe(200);
    // A dataset in my experiment: readable, attachable to it again; the change makes flowgate ask MLflow afresh.
    const lookupsOf = (id: string) => upstream.seen.filter((x) => x.url === `/api/3.0/mlflow/datasets/${id}/experiment-ids`).length;
    expect((await request(fg.url).get('/api/3.0/mlflow/datasets/d-mine').set('Authorization', basic('eve', eve))).status).toBe(200);
    const cached = lookupsOf('d-mine');
    expect((await request(fg.url).get('/api/3.0/mlflow/datasets/d-mine').set('Authorization', basic('eve', eve))).status).toBe(200);
    expect(lookupsOf('d-mine')).toBe(cached);
    const attached = await request(fg.url)
      .post('/api/3.0/mlflow/datasets/d-mine/add-experiments')
      .set('Authorization', basic('eve', eve))
      .send({ experiment_ids: ['3'] });
    expect(attached.status).toBe(200);
    expect((await request(fg.url).get('/api/3.0/mlflow/datasets/d-mine').set('Authorization', basic('eve', eve))).status).toBe(200);
    expect(lookupsOf('d-mine')).toBe(cached + 1);
    const forwarded = upstream.seen.filter((s) => s.headers['x-forwarded-user'] === 'eve').map((s) => s.url);
    expect(forwarded).toEqual([
      '/api/2.0/mlflow/experiments/get?experiment_id=1',
      '/api/2.0/mlflow/runs/get?run_id=r-open',
      '/api/2.0/mlflow/runs/log-metric',
      '/api/2.0/mlflow/runs/log-batch',
      '/api/2.0/mlflow/runs/log-inputs',
      '/api/2.0/mlflow/traces/link-prompts',
      '/api/3.0/mlflow/datasets/d-mine',
      '/api/3.0/mlflow/datasets/d-mine',
      '/api/3.0/mlflow/datasets/d-mine/add-experiments',
      '/api/3.0/mlflow/datasets/d-mine',
    ]);
  });
});

describe('credentials never reach MLflow', () => {
  it("drops Authorization and flowgate's own cookies, keeps other cookies", async () => {
    upstream.seen.length = 0;
    const res = await request(fg.url)
      .get('/api/2.0/mlflow/experiments/get?experiment_id=1')
      .set('Authorization', basic('eve', eve))
      .set('Cookie', 'flowgate_session=abc; theme=dark; __Host-flowgate_login=xyz; FLOWGATE_SESSION=q; __Secure-flowgate_session=r')
      .set('Baggage', 'enduser.id=admin,role=admin');
    expect(res.status).toBe(200);
    const seen = upstream.seen.find((s) => s.headers['x-forwarded-user'] === 'eve')!;
    expect(seen.headers.authorization).toBeUndefined();
    // The client's W3C baggage is its own word: an instrumented MLflow would copy it into its spans.
    expect(seen.headers.baggage).toBeUndefined();
    expect(seen.headers.cookie).toBe('theme=dark');
  });

  it('drops a flowgate cookie in any case even when it is the only one', async () => {
    upstream.seen.length = 0;
    const res = await request(fg.url)
      .get('/api/2.0/mlflow/experiments/get?experiment_id=1')
      .set('Authorization', basic('eve', eve))
      .set('Cookie', 'FLOWGATE_SESSION=q');
    expect(res.status).toBe(200);
    const seen = upstream.seen.find((s) => s.headers['x-forwarded-user'] === 'eve')!;
    expect(seen.headers.cookie).toBeUndefined();
  });
});

describe('a body flowgate read before deciding', () => {
  it('reaches MLflow whole, with its own length and without the client chunked framing', async () => {
    upstream.seen.length = 0;
    const body = JSON.stringify({ run_id: 'r-mine', key: 'k', value: 1, timestamp: 1, step: 0 });
    const { request: raw } = await import('node:http');
    const u = new URL(fg.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = raw(
        {
          host: u.hostname,
          port: u.port,
          method: 'POST',
          path: '/api/2.0/mlflow/runs/log-metric',
          headers: { authorization: basic('eve', eve), 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.write(body.slice(0, 10));
      req.end(body.slice(10));
    });
    expect(status).toBe(200);
    const seen = upstream.seen.find((s) => s.url === '/api/2.0/mlflow/runs/log-metric')!;
    expect(seen.body).toBe(body);
    expect(seen.headers['transfer-encoding']).toBeUndefined();
    expect(seen.headers['content-length']).toBe(String(Buffer.byteLength(body)));
  });
});
