import { describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { FlowgateError } from '../../src/errors.js';
import type { MlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { createResourceResolver, readField, type ResolveRequest, type ResolverOptions } from '../../src/authz/resolve.js';
import { inWorkspace } from '../../src/workspaces/request-workspace.js';
import { createRouteMatcher } from '../../src/authz/route-matcher.js';

const matcher = createRouteMatcher(ROUTE_CATALOG);

const notFound = (what: string) => Promise.reject(new FlowgateError('RESOURCE_DOES_NOT_EXIST', `${what} does not exist`));

/** A fake MLflow: runs r1,r2 in experiment 1, r9 in 9; model m1 in 3; trace tr-1 in 4, tr-2 in 5. */
function fakeLookups(calls: string[] = []): MlflowLookups {
  const runs: Record<string, string> = { r1: '1', r2: '1', r9: '9' };
  const traces: Record<string, string> = { 'tr-1': '4', 'tr-2': '5' };
  const datasets: Record<string, string[]> = { 'd-two': ['6', '7'], 'd-none': [] };
  return {
    experimentOfRun: (id) => (calls.push(`run:${id}`), runs[id] ? Promise.resolve(runs[id]) : notFound(`run ${id}`)),
    experimentOfLoggedModel: (id) => (calls.push(`model:${id}`), id === 'm1' ? Promise.resolve('3') : notFound(id)),
    experimentOfTrace: (id) => (calls.push(`trace:${id}`), traces[id] ? Promise.resolve(traces[id]) : notFound(id)),
    experimentIdByName: (name) => (calls.push(`name:${name}`), name === 'Default' ? Promise.resolve('0') : notFound(name)),
    isPrompt: (name) => (calls.push(`prompt:${name}`), Promise.resolve(name.startsWith('prompt-'))),
    experimentsOfDataset: (id) => (calls.push(`dataset:${id}`), id in datasets ? Promise.resolve(datasets[id]!) : notFound(id)),
    experimentOfOwned: (kind, id) => (calls.push(`${kind}:${id}`), id === 'owned-1' ? Promise.resolve('8') : notFound(id)),
  };
}

interface Req {
  query?: Record<string, string | string[]>;
  body?: unknown;
  headers?: Record<string, string | string[]>;
}

async function resolveFor(method: string, path: string, req: Req = {}, lookups = fakeLookups(), options: ResolverOptions = {}) {
  const found = matcher.match(method, path);
  if (!found) throw new Error(`no catalog row for ${method} ${path}`);
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) for (const one of [v].flat()) query.append(k, one);
  const request: ResolveRequest = { method, query, body: req.body, params: found.params, headers: req.headers ?? {} };
  return createResourceResolver(lookups, options)(found.entry, request);
}

async function errorOf(promise: Promise<unknown>): Promise<FlowgateError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(FlowgateError);
    return error as FlowgateError;
  }
  throw new Error('expected a rejection');
}

describe('resolve: each id kind', () => {
  it('experiment_id from the query of a GET and the body of a POST', async () => {
    expect(await resolveFor('GET', '/api/2.0/mlflow/experiments/get', { query: { experiment_id: '7' } })).toEqual([{ kind: 'experiment', id: '7' }]);
    expect(await resolveFor('POST', '/api/2.0/mlflow/runs/create', { body: { experiment_id: '8' } })).toEqual([{ kind: 'experiment', id: '8' }]);
  });

  it('reads a GET body when the query is empty, as MLflow does', async () => {
    expect(await resolveFor('GET', '/api/2.0/mlflow/experiments/get', { body: { experiment_id: '7' } })).toEqual([{ kind: 'experiment', id: '7' }]);
  });

  it('reads a double-encoded JSON body, as MLflow does', async () => {
    expect(await resolveFor('POST', '/api/2.0/mlflow/runs/create', { body: JSON.stringify({ experiment_id: '8' }) })).toEqual([{ kind: 'experiment', id: '8' }]);
  });

  it('experiment_ids gives one ref per distinct id', async () => {
    const refs = await resolveFor('POST', '/api/3.0/mlflow/traces/metrics', { body: { experiment_ids: ['1', '2', '1'] } });
    expect(refs).toEqual([{ kind: 'experiment', id: '1' }, { kind: 'experiment', id: '2' }]);
    const viaQuery = await resolveFor('GET', '/api/3.0/mlflow/datasets/search', { query: { experiment_ids: ['3', '4'] } });
    expect(viaQuery).toEqual([{ kind: 'experiment', id: '3' }, { kind: 'experiment', id: '4' }]);
  });

  it('experiment by name', async () => {
    expect(await resolveFor('GET', '/api/2.0/mlflow/experiments/get-by-name', { query: { experiment_name: 'Default' } })).toEqual([{ kind: 'experiment', id: '0' }]);
  });

  it('run → experiment, with run_uuid as the old spelling', async () => {
    expect(await resolveFor('GET', '/api/2.0/mlflow/runs/get', { query: { run_id: 'r9' } })).toEqual([{ kind: 'experiment', id: '9' }]);
    expect(await resolveFor('GET', '/api/2.0/mlflow/runs/get', { query: { run_uuid: 'r9' } })).toEqual([{ kind: 'experiment', id: '9' }]);
    expect(await resolveFor('POST', '/api/2.0/mlflow/runs/log-metric', { body: { run_id: 'r1', run_uuid: 'r1' } })).toEqual([{ kind: 'experiment', id: '1' }]);
  });

  it('several runs → their distinct experiments', async () => {
    const refs = await resolveFor('GET', '/ajax-api/2.0/mlflow/metrics/get-history-bulk', { query: { run_id: ['r1', 'r2', 'r9'] } });
    expect(refs).toEqual([{ kind: 'experiment', id: '1' }, { kind: 'experiment', id: '9' }]);
  });

  it('logged model → experiment (path parameter)', async () => {
    expect(await resolveFor('PATCH', '/api/2.0/mlflow/logged-models/m1/tags', { body: {} })).toEqual([{ kind: 'experiment', id: '3' }]);
  });

  it('evaluation dataset → every experiment it belongs to; none when it belongs to none', async () => {
    expect(await resolveFor('GET', '/api/3.0/mlflow/datasets/d-two')).toEqual([
      { kind: 'experiment', id: '6' },
      { kind: 'experiment', id: '7' },
    ]);
    expect(await resolveFor('POST', '/ajax-api/3.0/mlflow/datasets/d-two/records', { body: { records: '[]' } })).toHaveLength(2);
    expect(await resolveFor('GET', '/api/3.0/mlflow/datasets/d-none/records')).toEqual([]);
    expect((await errorOf(resolveFor('DELETE', '/api/3.0/mlflow/datasets/d-missing'))).code).toBe('RESOURCE_DOES_NOT_EXIST');
  });

  it('GenAI issue and label schema → their experiment', async () => {
    expect(await resolveFor('PATCH', '/api/3.0/mlflow/issues/owned-1', { body: { status: 'RESOLVED' } })).toEqual([{ kind: 'experiment', id: '8' }]);
    expect(await resolveFor('GET', '/api/3.0/mlflow/label-schemas/get', { query: { schema_id: 'owned-1' } })).toEqual([{ kind: 'experiment', id: '8' }]);
    expect(await resolveFor('DELETE', '/ajax-api/3.0/mlflow/label-schemas/delete', { body: { schema_id: 'owned-1' } })).toEqual([{ kind: 'experiment', id: '8' }]);
    expect((await errorOf(resolveFor('GET', '/api/3.0/mlflow/issues/other'))).code).toBe('RESOURCE_DOES_NOT_EXIST');
  });

  it('trace → experiment from a path parameter, a query field and a list', async () => {
    expect(await resolveFor('GET', '/api/3.0/mlflow/traces/tr-1')).toEqual([{ kind: 'experiment', id: '4' }]);
    expect(await resolveFor('GET', '/api/3.0/mlflow/traces/get', { query: { trace_id: 'tr-2' } })).toEqual([{ kind: 'experiment', id: '5' }]);
    expect(await resolveFor('POST', '/api/3.0/mlflow/traces/batchGetInfos', { body: { trace_ids: ['tr-1', 'tr-2'] } })).toEqual([
      { kind: 'experiment', id: '4' },
      { kind: 'experiment', id: '5' },
    ]);
    expect(await resolveFor('GET', '/ajax-api/2.0/mlflow/get-trace-artifact', { query: { request_id: 'tr-1' } })).toEqual([{ kind: 'experiment', id: '4' }]);
  });

  it('v3 start-trace reads the nested experiment id, in either JSON spelling', async () => {
    const snake = { trace: { trace_info: { trace_location: { mlflow_experiment: { experiment_id: '12' } } } } };
    const camel = { trace: { traceInfo: { traceLocation: { mlflowExperiment: { experimentId: '12' } } } } };
    expect(await resolveFor('POST', '/api/3.0/mlflow/traces', { body: snake })).toEqual([{ kind: 'experiment', id: '12' }]);
    expect(await resolveFor('POST', '/api/3.0/mlflow/traces', { body: camel })).toEqual([{ kind: 'experiment', id: '12' }]);
  });

  it('OTLP export reads the experiment from its header', async () => {
    expect(await resolveFor('POST', '/v1/traces', { headers: { 'x-mlflow-experiment-id': '6' } })).toEqual([{ kind: 'experiment', id: '6' }]);
  });

  it('artifact path → its first segment, from the URL or the list query', async () => {
    expect(await resolveFor('PUT', '/api/2.0/mlflow-artifacts/artifacts/5/r1/artifacts/50% a b.txt')).toEqual([{ kind: 'experiment', id: '5' }]);
    expect(await resolveFor('GET', '/api/2.0/mlflow-artifacts/artifacts', { query: { path: '5/r1/artifacts' } })).toEqual([{ kind: 'experiment', id: '5' }]);
    expect(await resolveFor('POST', '/api/2.0/mlflow-artifacts/mpu/complete/8/models/m1/artifacts/x', { body: { path: 'local', upload_id: 'u' } })).toEqual([{ kind: 'experiment', id: '8' }]);
  });

  it('routes needing no resource resolve to nothing and ask MLflow nothing', async () => {
    const calls: string[] = [];
    expect(await resolveFor('POST', '/api/2.0/mlflow/runs/search', { body: { experiment_ids: ['1'] } }, fakeLookups(calls))).toEqual([]);
    expect(await resolveFor('POST', '/api/2.0/mlflow/experiments/create', { body: { name: 'x' } }, fakeLookups(calls))).toEqual([]);
    expect(calls).toEqual([]);
  });
});

describe('resolve: without a promise when nothing needs looking up', () => {
  const requestFor = (method: string, path: string, query: Record<string, string>) => {
    const found = matcher.match(method, path)!;
    const request: ResolveRequest = { method, query: new URLSearchParams(query), body: undefined, params: found.params, headers: {} };
    return { entry: found.entry, request };
  };

  it('ids in the request and runs whose experiment is known answer at once; other runs through a look-up', async () => {
    const calls: string[] = [];
    const resolve = createResourceResolver({ ...fakeLookups(calls), knownExperimentOfRun: (id) => (id === 'r1' ? '1' : undefined) });
    const byId = requestFor('GET', '/api/2.0/mlflow/experiments/get', { experiment_id: '7' });
    expect(resolve(byId.entry, byId.request)).toEqual([{ kind: 'experiment', id: '7' }]);
    const artifact = requestFor('GET', '/api/2.0/mlflow-artifacts/artifacts/5/r1/artifacts/a.txt', {});
    expect(resolve(artifact.entry, artifact.request)).toEqual([{ kind: 'experiment', id: '5' }]);
    const known = requestFor('GET', '/api/2.0/mlflow/runs/get', { run_id: 'r1' });
    expect(resolve(known.entry, known.request)).toEqual([{ kind: 'experiment', id: '1' }]);
    expect(calls).toEqual([]);
    const unknown = requestFor('GET', '/api/2.0/mlflow/runs/get', { run_id: 'r9' });
    const pending = resolve(unknown.entry, unknown.request);
    expect(pending).toBeInstanceOf(Promise);
    expect(await pending).toEqual([{ kind: 'experiment', id: '9' }]);
    expect(calls).toEqual(['run:r9']);
  });

  it('a bad id is still refused as a 400', () => {
    const resolve = createResourceResolver(fakeLookups());
    const bad = requestFor('GET', '/api/2.0/mlflow/experiments/get', { experiment_id: '+1' });
    expect(() => resolve(bad.entry, bad.request)).toThrow(FlowgateError);
  });
});

describe('resolve: registered models and prompts', () => {
  it('tells a prompt from a model by the tag MLflow keeps', async () => {
    expect(await resolveFor('GET', '/api/2.0/mlflow/registered-models/get', { query: { name: 'prompt-a' } })).toEqual([{ kind: 'prompt', id: 'prompt-a' }]);
    expect(await resolveFor('GET', '/api/2.0/mlflow/registered-models/get', { query: { name: 'model-a' } })).toEqual([{ kind: 'registered_model', id: 'model-a' }]);
    expect(await resolveFor('DELETE', '/api/2.0/mlflow/model-versions/delete', { body: { name: 'prompt-b', version: '1' } })).toEqual([{ kind: 'prompt', id: 'prompt-b' }]);
    expect(await resolveFor('GET', '/model-versions/get-artifact', { query: { name: 'model-a', version: '1', path: 'x' } })).toEqual([{ kind: 'registered_model', id: 'model-a' }]);
  });

  it('on create, reads the kind from the request tags without asking MLflow', async () => {
    const calls: string[] = [];
    const prompt = await resolveFor('POST', '/api/2.0/mlflow/registered-models/create', { body: { name: 'p', tags: [{ key: 'mlflow.prompt.is_prompt', value: 'True' }] } }, fakeLookups(calls));
    expect(prompt).toEqual([{ kind: 'prompt', id: 'p' }]);
    const model = await resolveFor('POST', '/api/2.0/mlflow/registered-models/create', { body: { name: 'm', tags: [{ key: 'mlflow.prompt.is_prompt', value: 'false' }] } }, fakeLookups(calls));
    expect(model).toEqual([{ kind: 'registered_model', id: 'm' }]);
    expect(calls).toEqual([]);
  });

  it('setting or removing the prompt tag needs the right on both kinds', async () => {
    const set = await resolveFor('POST', '/api/2.0/mlflow/registered-models/set-tag', { body: { name: 'model-a', key: 'mlflow.prompt.is_prompt', value: 'true' } });
    expect(set).toEqual([{ kind: 'registered_model', id: 'model-a' }, { kind: 'prompt', id: 'model-a' }]);
    // MLflow reads a DELETE's JSON body, as its UI sends it.
    const removed = await resolveFor('DELETE', '/api/2.0/mlflow/registered-models/delete-tag', { body: { name: 'prompt-a', key: 'mlflow.prompt.is_prompt' } });
    expect(removed).toHaveLength(2);
  });
});

describe("resolve: artifact paths under MLflow's workspaces (workspaces/<ws>/<experiment id>/...)", () => {
  const ON: ResolverOptions = { workspaceMode: { enabled: true } };
  const ART = '/api/2.0/mlflow-artifacts';
  /** Every artifact route, with `path` (what follows the route's prefix, or the listing's `path`). */
  const everyRoute = (path: string): Array<[string, string, Req]> => [
    ['PUT', `${ART}/artifacts/${path}`, {}],
    ['GET', `${ART}/artifacts/${path}`, {}],
    ['DELETE', `${ART}/artifacts/${path}`, {}],
    ['GET', `${ART}/artifacts`, { query: { path } }],
    ['POST', `${ART}/mpu/create/${path}`, {}],
    ['POST', `${ART}/mpu/complete/${path}`, { body: { path: 'local', upload_id: 'u' } }],
    ['POST', `${ART}/mpu/abort/${path}`, {}],
    ['GET', `${ART}/presigned/${path}`, {}],
  ];
  const inWs = <T>(ws: string | undefined, fn: () => Promise<T>): Promise<T> => (ws === undefined ? fn() : inWorkspace(ws, fn));
  const experimentsOf = (ws: string | undefined, method: string, path: string, req: Req, options = ON) =>
    inWs(ws, () => resolveFor(method, path, req, fakeLookups(), options));

  it('the experiment is the segment after the prefix of the request\'s own workspace, on every artifact route', async () => {
    for (const [ws, prefix] of [['ws-a', 'workspaces/ws-a'], [undefined, 'workspaces/default']] as const)
      for (const [method, path, req] of everyRoute(`${prefix}/5/r1/artifacts/hello.txt`))
        expect(await experimentsOf(ws, method, path, req), `${ws} ${method} ${path}`).toEqual([{ kind: 'experiment', id: '5' }]);
  });

  it('the unprefixed form is read as it was, in any workspace', async () => {
    for (const ws of ['ws-a', undefined])
      for (const [method, path, req] of everyRoute('5/r1/artifacts/hello.txt'))
        expect(await experimentsOf(ws, method, path, req), `${ws} ${method} ${path}`).toEqual([{ kind: 'experiment', id: '5' }]);
  });

  it("another workspace's prefix is a 400 in MLflow's words, before any decision", async () => {
    for (const [ws, other] of [['ws-a', 'ws-b'], ['ws-a', 'default'], [undefined, 'ws-a'], ['ws-a', 'WS-A']] as const)
      for (const [method, path, req] of everyRoute(`workspaces/${other}/5/r1/artifacts/hello.txt`)) {
        const error = await errorOf(experimentsOf(ws, method, path, req));
        expect(error.status, `${ws} ${method} ${path}`).toBe(400);
        expect(error.code).toBe('INVALID_PARAMETER_VALUE');
        expect(error.message).toBe(`Artifact path targets workspace '${other}' but the workspace specified in the request is '${ws ?? 'default'}'.`);
      }
  });

  it('a prefix naming no experiment is refused: no listing of workspace or experiment directories', async () => {
    for (const path of ['workspaces', 'workspaces/', 'workspaces//5/r1', 'workspaces/ws-a', 'workspaces/ws-a/', 'workspaces/ws-a//r1', 'workspaces/ws-a/ws-a/5', 'workspaces/ws-a/01/r1', 'workspaces/ws-a/+5/r1'])
      for (const [method, route, req] of everyRoute(path)) {
        expect((await errorOf(experimentsOf('ws-a', method, route, req))).status, `${method} ${route} ${JSON.stringify(req)}`).toBe(400);
      }
  });

  it('dot segments and backslashes around the prefix are refused', async () => {
    for (const path of ['workspaces/ws-a/../ws-b/5/r1', 'workspaces/ws-b/../ws-a/5/r1', 'workspaces/./ws-a/5/r1', 'workspaces/ws-a/./5/r1', 'workspaces\\ws-a\\5\\r1', 'workspaces/ws-a/5\\..\\6/r1'])
      expect((await errorOf(experimentsOf('ws-a', 'GET', `${ART}/artifacts`, { query: { path } }))).status, path).toBe(400);
  });

  it('without workspaces (or before MLflow said) `workspaces/...` names no experiment: refused as before', async () => {
    for (const options of [{ workspaceMode: { enabled: false } }, {}])
      for (const path of ['workspaces/default/5/r1/artifacts/hello.txt', 'workspaces/ws-a/5/r1', 'workspaces', 'workspaces/'])
        for (const [method, route, req] of everyRoute(path)) {
          const error = await errorOf(experimentsOf(undefined, method, route, req, options));
          expect(error.status, `${method} ${route} ${JSON.stringify(req)}`).toBe(400);
          expect(error.message).toMatch(/experiment id/);
        }
  });
});

describe('resolve: refusals', () => {
  it.each([
    ['run_id vs run_uuid', 'POST', '/api/2.0/mlflow/runs/update', { body: { run_id: 'r1', run_uuid: 'r9' } }],
    ['query vs body', 'POST', '/api/2.0/mlflow/runs/create', { query: { experiment_id: '1' }, body: { experiment_id: '2' } }],
    ['snake vs camel spelling', 'POST', '/api/2.0/mlflow/runs/create', { body: { experiment_id: '1', experimentId: '2' } }],
    ['repeated query value', 'GET', '/api/2.0/mlflow/experiments/get', { query: { experiment_id: ['1', '2'] } }],
    ['GET query vs GET body', 'GET', '/api/2.0/mlflow/registered-models/get', { query: { name: 'a' }, body: { name: 'b' } }],
    ['list in query vs body', 'POST', '/api/3.0/mlflow/traces/metrics', { query: { experiment_ids: '1' }, body: { experiment_ids: ['2'] } }],
    ['two OTLP headers', 'POST', '/v1/traces', { headers: { 'x-mlflow-experiment-id': ['1', '2'] } }],
  ] as const)('conflicting copies (%s) → 400', async (_name, method, path, req) => {
    const error = await errorOf(resolveFor(method, path, req as Req));
    expect(error.status).toBe(400);
    expect(error.code).toBe('INVALID_PARAMETER_VALUE');
    expect(error.message).toMatch(/Conflicting values/);
  });

  it.each([
    ['experiment_id', 'GET', '/api/2.0/mlflow/experiments/get', {}],
    ['run_id', 'POST', '/api/2.0/mlflow/runs/log-batch', { body: { metrics: [] } }],
    ['run_id', 'POST', '/api/2.0/mlflow/runs/log-batch', { body: { run_id: '' } }],
    ['experiment_ids', 'POST', '/api/3.0/mlflow/traces/metrics', { body: { experiment_ids: [] } }],
    ['name', 'GET', '/api/2.0/mlflow/registered-models/get', {}],
    ['x-mlflow-experiment-id', 'POST', '/v1/traces', {}],
    ['path', 'GET', '/api/2.0/mlflow-artifacts/artifacts', {}],
  ] as const)('missing %s → 400 naming it', async (field, method, path, req) => {
    const error = await errorOf(resolveFor(method, path, req as Req));
    expect(error.status).toBe(400);
    expect(error.message).toContain(`'${field}'`);
  });

  it.each([' 1', '01', '+1', '1_0', '١', '1.0', '-1', 'abc'])('refuses the non-canonical experiment id %j (MLflow would int() it)', async (id) => {
    for (const attempt of [
      () => resolveFor('POST', '/api/2.0/mlflow/runs/create', { body: { experiment_id: id } }),
      () => resolveFor('POST', '/api/3.0/mlflow/traces/metrics', { body: { experiment_ids: ['2', id] } }),
      // Surrounding blanks are not part of a header value (HTTP's optional whitespace), so ' 1' is fine there.
      ...(id.trim() === id ? [() => resolveFor('POST', '/v1/traces', { headers: { 'x-mlflow-experiment-id': id } })] : []),
      () => resolveFor('GET', '/api/2.0/mlflow-artifacts/artifacts', { query: { path: `${id}/r1/artifacts` } }),
    ]) {
      expect((await errorOf(attempt())).status).toBe(400);
    }
  });

  it('treats a comma-joined repeated header as two values', async () => {
    const error = await errorOf(resolveFor('POST', '/v1/traces', { headers: { 'x-mlflow-experiment-id': '1, 2' } }));
    expect(error.message).toMatch(/Conflicting/);
    expect(await resolveFor('POST', '/v1/traces', { headers: { 'x-mlflow-experiment-id': '3, 3' } })).toEqual([{ kind: 'experiment', id: '3' }]);
  });

  it('refuses a non-string id', async () => {
    const error = await errorOf(resolveFor('POST', '/api/2.0/mlflow/runs/create', { body: { experiment_id: { $ne: 1 } } }));
    expect(error.status).toBe(400);
  });

  it('refuses artifact paths that climb or start empty', async () => {
    for (const path of ['../1/x', '5/../../6/x']) {
      const error = await errorOf(resolveFor('GET', '/api/2.0/mlflow-artifacts/artifacts', { query: { path } }));
      expect(error.status, path).toBe(400);
    }
    const empty = await errorOf(resolveFor('GET', '/api/2.0/mlflow-artifacts/artifacts/'));
    expect(empty.status).toBe(400);
  });

  it('a failed look-up is an error, never an empty (allowing) result', async () => {
    const down: MlflowLookups = {
      ...fakeLookups(),
      experimentOfRun: () => Promise.reject(new FlowgateError('TEMPORARILY_UNAVAILABLE', 'down')),
      isPrompt: () => Promise.reject(new FlowgateError('TEMPORARILY_UNAVAILABLE', 'down')),
    };
    expect((await errorOf(resolveFor('GET', '/api/2.0/mlflow/runs/get', { query: { run_id: 'r1' } }, down))).status).toBe(503);
    expect((await errorOf(resolveFor('GET', '/api/2.0/mlflow/registered-models/get', { query: { name: 'm' } }, down))).status).toBe(503);
    // One failing id among several fails the whole request.
    expect((await errorOf(resolveFor('POST', '/api/3.0/mlflow/traces/batchGetInfos', { body: { trace_ids: ['tr-1', 'tr-x'] } }))).status).toBe(404);
  });
});

describe('readField', () => {
  it('returns the value(s) a row names, or [] when absent', () => {
    const entry = matcher.match('POST', '/api/2.0/mlflow/registered-models/rename')!.entry;
    const request: ResolveRequest = { method: 'POST', query: new URLSearchParams(), body: { name: 'old', new_name: 'new' }, params: {}, headers: {} };
    expect(readField(entry.id, request)).toEqual(['old']);
    expect(readField({ kind: 'model_name', field: 'new_name', from: 'body' }, request)).toEqual(['new']);
    expect(readField({ kind: 'model_name', field: 'absent', from: 'auto' }, request)).toEqual([]);
  });
});
