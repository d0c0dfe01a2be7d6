import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../helpers/prom.js';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

/*
 * The gate against a small stateful stand-in for MLflow: every id a request carries (path, body,
 * client-chosen ids, OTLP spans) is authorized, reserved fields are refused, cached mappings
 * follow renames and re-tags, and a refusal is logged with the check that refused it.
 */

const OWN_TRACE = `tr-${'1'.repeat(32)}`;
const SECRET_TRACE = `tr-${'2'.repeat(32)}`;
const state = {
  names: new Map<string, string>([['foo', '1']]),
  prompts: new Set<string>(),
  nextExperiment: 5,
  traces: new Map<string, string>([[OWN_TRACE, '1'], [SECRET_TRACE, '2']]),
  loggedModels: new Map<string, string>([['m-own', '1'], ['m-secret', '2']]),
};
const json = (status: number, body: unknown) => ({ status, body });
const missing = () => json(404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'not found' });

function mlflow(req: SeenRequest) {
  const url = new URL(req.url, 'http://x');
  const body = req.body ? (JSON.parse(req.body.startsWith('"') ? JSON.parse(req.body) : req.body) as Record<string, string>) : {};
  const p = url.pathname.replace(/^\/ajax-api\//, '/api/');
  if (p === '/version') return json(200, '3.17.2');
  if (p === '/api/2.0/mlflow/experiments/get-by-name') {
    const id = state.names.get(url.searchParams.get('experiment_name') ?? '');
    return id ? json(200, { experiment: { experiment_id: id } }) : missing();
  }
  if (p === '/api/2.0/mlflow/experiments/update' && body.new_name) {
    for (const [name, id] of state.names) if (id === body.experiment_id) state.names.delete(name);
    state.names.set(body.new_name, body.experiment_id!);
    return json(200, {});
  }
  if (p === '/api/2.0/mlflow/runs/get' && url.searchParams.get('run_id') === 'r1') return json(200, { run: { info: { run_id: 'r1', experiment_id: '1' } } });
  if (p === '/api/2.0/mlflow/experiments/create') return json(200, { experiment_id: String(state.nextExperiment++) });
  if (p === '/api/2.0/mlflow/registered-models/get') {
    const name = url.searchParams.get('name') ?? '';
    return json(200, { registered_model: { name, tags: state.prompts.has(name) ? [{ key: 'mlflow.prompt.is_prompt', value: 'true' }] : [] } });
  }
  if (p === '/api/2.0/mlflow/registered-models/set-tag' && body.key === 'mlflow.prompt.is_prompt') {
    state.prompts.add(body.name!);
    return json(200, {});
  }
  const trace = p.match(/^\/api\/3\.0\/mlflow\/traces\/(tr-[0-9a-f]+)$/)?.[1];
  if (trace && req.method === 'GET') {
    const experiment = state.traces.get(trace);
    return experiment ? json(200, { trace: { trace_info: { trace_id: trace, trace_location: { mlflow_experiment: { experiment_id: experiment } } } } }) : missing();
  }
  const model = p.match(/^\/api\/2\.0\/mlflow\/logged-models\/([^/]+)$/)?.[1];
  if (model && req.method === 'GET') {
    const experiment = state.loggedModels.get(model);
    return experiment ? json(200, { model: { info: { model_id: model, experiment_id: experiment } } }) : missing();
  }
  return json(200, {});
}

let fg: TestFlowgate;
/** A second flowgate on the same store: what one forgets, the other must forget too. */
let peer: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let mallory = '';
const api = () => request(fg.url);
const asAdmin = (r: request.Test) => r.set('Authorization', adminAuth());
const asMallory = (r: request.Test) => r.set('Authorization', basic('mallory', mallory));
const grant = (kind: string, id: string, permission: string) =>
  asAdmin(api().post(`/api/2.0/mlflow/permissions/users/mallory/${kind}/${encodeURIComponent(id)}`)).send({ permission });
const forwarded = (path: string) => upstream.seen.filter((r) => r.url.startsWith(path) && r.method !== 'GET');

beforeAll(async () => {
  upstream = await startStubUpstream(mlflow);
  const env = { FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_LOOKUP_CACHE_TTL_MS: '3600000', FLOWGATE_STORE_WATCH_MS: '50' };
  fg = await startTestFlowgate(env);
  peer = await startTestFlowgate(env, fg.dir);
  await asAdmin(api().post('/api/2.0/mlflow/users/create')).send({ username: 'mallory' });
  mallory = (
    await asAdmin(api().patch('/api/2.0/mlflow/permissions/users/access-token')).send({
      username: 'mallory',
      expiration: new Date(Date.now() + 86_400_000).toISOString(),
    })
  ).body.token;
  expect((await grant('experiments', '1', 'MANAGE')).status).toBe(201);
});
afterAll(async () => {
  await fg?.close();
  await peer?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('ids MLflow reads from the body', () => {
  it('refuses a finalize whose body names another logged model than its path', async () => {
    const before = forwarded('/api/2.0/mlflow/logged-models/').length;
    for (const field of ['model_id', 'modelId']) {
      const res = await asMallory(api().patch('/api/2.0/mlflow/logged-models/m-own')).send({ [field]: 'm-secret', status: 'LOGGED_MODEL_READY' });
      expect(res.status, field).toBe(400);
      expect(res.body.error_code).toBe('INVALID_PARAMETER_VALUE');
    }
    expect(forwarded('/api/2.0/mlflow/logged-models/').length).toBe(before);
    const same = await asMallory(api().patch('/ajax-api/2.0/mlflow/logged-models/m-own')).send({ model_id: 'm-own', status: 'LOGGED_MODEL_READY' });
    expect(same.status).toBe(200);
  });

  it('reads a double-encoded body as MLflow does: a foreign id inside it is still refused', async () => {
    const res = await asMallory(api().patch('/api/2.0/mlflow/logged-models/m-own'))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(JSON.stringify({ model_id: 'm-secret', status: 2 })));
    expect(res.status).toBe(400);
  });
});

describe('client-chosen trace ids', () => {
  const startTrace = (traceId: string, experimentId = '1', tags: Record<string, string> = {}) =>
    asMallory(api().post('/api/3.0/mlflow/traces')).send({
      trace: { trace_info: { trace_id: traceId, trace_location: { type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: experimentId } }, tags } },
    });

  it('starts a new trace and updates an own one, but never writes to one of another experiment', async () => {
    expect((await startTrace(`tr-${'3'.repeat(32)}`)).status).toBe(200);
    expect((await startTrace(OWN_TRACE)).status).toBe(200);
    const res = await startTrace(SECRET_TRACE);
    expect(res.status).toBe(403);
    expect(res.body.error_code).toBe('PERMISSION_DENIED');
  });

  it('refuses OTLP spans that land in a trace of another experiment (protobuf JSON form)', async () => {
    const otlp = (hex: string) => ({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: hex, spanId: '0102030405060708', name: 's' }] }] }] });
    const send = (hex: string) =>
      asMallory(api().post('/v1/traces')).set('X-Mlflow-Experiment-Id', '1').set('Content-Type', 'application/json').send(JSON.stringify(otlp(hex)));
    expect((await send('2'.repeat(32))).status).toBe(403);
    expect((await send('1'.repeat(32))).status).toBe(200);
    expect((await send('4'.repeat(32))).status).toBe(200);
  });
});

describe('fields MLflow reads as storage locations', () => {
  it('refuses reserved trace tags on every trace route, and an experiment artifact location, to non-admins', async () => {
    const pointer = { key: 'mlflow.artifactLocation', value: 'mlflow-artifacts:/2/traces/x/artifacts' };
    const refused = [
      await asMallory(api().patch(`/api/2.0/mlflow/traces/${OWN_TRACE}/tags`)).send(pointer),
      await asMallory(api().patch(`/ajax-api/3.0/mlflow/traces/${OWN_TRACE}/tags`)).send(pointer),
      await asMallory(api().post('/api/3.0/mlflow/traces')).send({
        trace: { trace_info: { trace_id: OWN_TRACE, trace_location: { mlflow_experiment: { experiment_id: '1' } }, tags: { 'mlflow.trace.spansLocation': 'ARTIFACT_REPO' } } },
      }),
      await asMallory(api().post('/api/2.0/mlflow/experiments/create')).send({ name: 'sneaky', artifact_location: 'mlflow-artifacts:/2' }),
      await asMallory(api().post('/api/2.0/mlflow/experiments/create')).send({ name: 'sneaky', artifactLocation: 'file:///tmp/artifacts/2' }),
    ];
    for (const res of refused) {
      expect(res.status).toBe(403);
      expect(res.body.message).toMatch(/only administrators/);
    }
    // Ordinary tags and a plain create go through.
    expect((await asMallory(api().patch(`/api/2.0/mlflow/traces/${OWN_TRACE}/tags`)).send({ key: 'team', value: 'a' })).status).toBe(200);
    expect((await asAdmin(api().post('/api/2.0/mlflow/experiments/create')).send({ name: 'admin-chosen', artifact_location: 'file:///data/x' })).status).toBe(200);
  });
});

describe('cached mappings follow MLflow', () => {
  it('forgets an experiment name when an experiment is renamed, on every flowgate of the store', async () => {
    const byName = (url: string) => asMallory(request(url).get('/api/2.0/mlflow/experiments/get-by-name?experiment_name=foo'));
    // foo is experiment 1, cached by both.
    for (const url of [fg.url, peer.url]) expect((await byName(url)).status).toBe(200);
    expect((await asAdmin(api().post('/api/2.0/mlflow/experiments/update')).send({ experiment_id: '1', new_name: 'foo-old' })).status).toBe(200);
    expect((await asAdmin(api().post('/api/2.0/mlflow/experiments/update')).send({ experiment_id: '2', new_name: 'foo' })).status).toBe(200);
    // foo is now experiment 2.
    expect((await byName(fg.url)).status).toBe(403);
    await eventually(async () => expect((await byName(peer.url)).status).toBe(403));
  });

  it('refuses an answer by name about another experiment than the one decided on (the name moved outside flowgate)', async () => {
    state.names.set('baz', '1');
    const byName = () => asMallory(api().get('/ajax-api/2.0/mlflow/experiments/get-by-name?experiment_name=baz'));
    const first = await byName();
    expect(first.status, JSON.stringify(first.body)).toBe(200); // baz is experiment 1, cached
    // mlflow gc and a new create, neither through flowgate: baz is now experiment 3.
    state.names.set('baz', '3');
    const stale = await byName();
    expect(stale.status).toBe(403);
    expect(JSON.stringify(stale.body)).not.toContain('"experiment_id":"3"');
    expect((await byName()).status).toBe(403); // decided on the fresh mapping now
  });

  it('forgets a model\'s prompt flag when the prompt tag is set', async () => {
    expect((await grant('registered-models', 'shared', 'READ')).status).toBe(201);
    const get = () => asMallory(api().get('/api/2.0/mlflow/registered-models/get?name=shared'));
    expect((await get()).status).toBe(200);
    expect((await asAdmin(api().post('/api/2.0/mlflow/registered-models/set-tag')).send({ name: 'shared', key: 'mlflow.prompt.is_prompt', value: 'true' })).status).toBe(200);
    expect((await get()).status).toBe(403); // now a prompt: a model grant does not reach it
  });
});

describe('every mapping change reaches the store log other flowgates follow', () => {
  const logged = async () => (await fg.store.sql.all('SELECT cache, key FROM mapping_changes ORDER BY seq')) as Array<{ cache: string; key: string }>;
  const after = async (send: () => Promise<unknown>) => {
    const before = (await logged()).length;
    await send();
    return eventually(async () => {
      const rows = (await logged()).slice(before);
      if (rows.length === 0) throw new Error('no mapping change logged');
      return rows;
    });
  };

  it.each([
    ['delete', '/api/2.0/mlflow/experiments/delete'],
    ['restore', '/api/2.0/mlflow/experiments/restore'],
    ['rename', '/api/2.0/mlflow/experiments/update'],
  ])('an experiment %s forgets the experiment names', async (_, path) => {
    const rows = await after(() => asAdmin(api().post(path)).send({ experiment_id: '5', new_name: 'renamed-5' }));
    expect(rows).toContainEqual({ cache: 'experiment_names', key: '' });
  });

  it('a tag set or removed on a model forgets its prompt flag', async () => {
    expect(await after(() => asAdmin(api().post('/api/2.0/mlflow/registered-models/set-tag')).send({ name: 'flagged', key: 'k', value: 'v' }))).toContainEqual({
      cache: 'model',
      key: 'flagged',
    });
    expect(await after(() => asAdmin(api().delete('/api/2.0/mlflow/registered-models/delete-tag')).send({ name: 'flagged', key: 'k' }))).toContainEqual({
      cache: 'model',
      key: 'flagged',
    });
  });

  it('a trace written with a client-chosen id (start v3, OTLP) forgets that trace', async () => {
    const id = `tr-${'5'.repeat(32)}`;
    const rows = await after(() =>
      asMallory(api().post('/api/3.0/mlflow/traces')).send({ trace: { trace_info: { trace_id: id, trace_location: { mlflow_experiment: { experiment_id: '1' } } } } }),
    );
    expect(rows).toContainEqual({ cache: 'trace', key: id });
    const otlp = await after(() =>
      asMallory(api().post('/v1/traces'))
        .set('X-Mlflow-Experiment-Id', '1')
        .set('Content-Type', 'application/json')
        .send(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: '6'.repeat(32), spanId: '0102030405060708', name: 's' }] }] }] })),
    );
    expect(otlp).toContainEqual({ cache: 'trace', key: `tr-${'6'.repeat(32)}` });
  });
});

describe('grant lifecycle', () => {
  it('prunes grants left on an experiment id MLflow hands out again', async () => {
    const reused = String(state.nextExperiment);
    expect((await grant('experiments', reused, 'READ')).status).toBe(201); // left over from a collected experiment
    const created = await asAdmin(api().post('/api/2.0/mlflow/experiments/create')).send({ name: 'fresh' });
    expect(created.body.experiment_id).toBe(reused);
    const left = await asAdmin(api().get(`/api/2.0/mlflow/permissions/users/mallory/experiments/${reused}`));
    expect(left.status).toBe(404);
  });

  it('drops a model\'s grants when its delete body is a JSON string', async () => {
    expect((await grant('registered-models', 'doomed', 'MANAGE')).status).toBe(201);
    const res = await asMallory(api().delete('/api/2.0/mlflow/registered-models/delete'))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify(JSON.stringify({ name: 'doomed' })));
    expect(res.status).toBe(200);
    const left = await asAdmin(api().get('/api/2.0/mlflow/permissions/users/mallory/registered-models/doomed'));
    expect(left.status).toBe(404);
  });
});

describe('the refusing check names the reason', () => {
  it('logs a refusal by a further check with that check\'s reason, not the main allow', async () => {
    const res = await asMallory(api().post('/api/2.0/mlflow/runs/log-batch'))
      .set('X-Request-Id', 'also-deny-1')
      .send({ run_id: 'r1', metrics: [{ key: 'k', value: 1, timestamp: 1, model_id: 'm-secret' }] });
    expect(res.status).toBe(403);
    const line = fg.logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { requestId?: string; decision?: string; reason?: string })
      .find((l) => l.requestId === 'also-deny-1');
    expect(line).toMatchObject({ decision: 'deny', reason: 'default-permission' });
  });
});

describe('explaining a decision', () => {
  const explain = (params: Record<string, string>, as = asMallory) => as(api().get(`/api/2.0/mlflow/permissions/explain?${new URLSearchParams(params)}`));

  it('names the row, the resources, the grants considered and the deciding check, as the gate decides', async () => {
    const denied = await explain({ username: 'mallory', method: 'GET', path: '/api/2.0/mlflow/experiments/get?experiment_id=2' }, asAdmin);
    expect(denied.status).toBe(200);
    expect(denied.body).toMatchObject({
      username: 'mallory',
      route: { pattern: '/api/2.0/mlflow/experiments/get', need: 'read' },
      resources: [{ kind: 'experiment', id: '2', direct: null, groups: [], effective: 'NO_PERMISSIONS', rule: 'default-permission' }],
      verdict: { allow: false, reason: 'default-permission' },
    });
    const allowed = await explain({ method: 'GET', path: '/api/2.0/mlflow/experiments/get?experiment_id=1' });
    expect(allowed.body).toMatchObject({ resources: [{ id: '1', direct: 'MANAGE', rule: 'direct-grant' }], verdict: { allow: true, reason: 'direct-grant' } });
    // A further check refuses: the verdict carries every check and the refusing one's reason.
    const logBatch = {
      method: 'POST',
      path: '/api/2.0/mlflow/runs/log-batch',
      body: JSON.stringify({ run_id: 'r1', metrics: [{ key: 'k', value: 1, timestamp: 1, model_id: 'm-secret' }] }),
    };
    const further = await explain({ username: 'mallory', ...logBatch }, asAdmin);
    expect(further.body.verdict).toMatchObject({ allow: false, reason: 'default-permission' });
    expect(further.body.verdict.checks).toEqual([
      { check: 'main', allow: true, reason: 'direct-grant' },
      { check: 'also', allow: false, reason: 'default-permission' },
    ]);
    // Asked by mallory herself, what she may not read is explained as nothing at all.
    for (const own of [{ method: 'GET', path: '/api/2.0/mlflow/experiments/get?experiment_id=2' }, logBatch]) {
      const mine = await explain(own);
      expect(mine.body).toMatchObject({ username: 'mallory', resources: [], verdict: { allow: false, reason: 'not-readable', checks: [] } });
    }
  });

  it('answers a user about themself only, an administrator about anyone', async () => {
    expect((await explain({ username: 'admin', method: 'GET', path: '/api/2.0/mlflow/experiments/get?experiment_id=2' })).status).toBe(403);
    const byAdmin = await explain({ username: 'mallory', method: 'GET', path: '/api/2.0/mlflow/experiments/get?experiment_id=2' }, asAdmin);
    expect(byAdmin.body.verdict.allow).toBe(false);
    expect((await explain({ method: 'GET', path: 'no-slash' })).status).toBe(400);
  });

  it('reads the path as the gate reads a request: other spellings of a route are explained as that route', async () => {
    const canonical = await explain({ username: 'mallory', method: 'GET', path: '/api/2.0/mlflow/experiments/get?experiment_id=2' }, asAdmin);
    for (const path of ['//api/2.0/mlflow/./experiments/get?experiment_id=2', '/api/2.0/mlflow/runs/../experiments/get?experiment_id=2', '/api/2.0/mlflow/experiments%2Fget?experiment_id=2']) {
      const other = await explain({ username: 'mallory', method: 'GET', path }, asAdmin);
      expect(other.status, path).toBe(200);
      expect({ route: other.body.route, verdict: other.body.verdict }, path).toEqual({ route: canonical.body.route, verdict: canonical.body.verdict });
    }
    // What the gate refuses before any decision is refused here too.
    expect((await explain({ username: 'mallory', method: 'GET', path: '/api/2.0/mlflow/experiments/get%252f?experiment_id=2' }, asAdmin)).status).toBe(400);
  });
});
