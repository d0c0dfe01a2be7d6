import { describe, expect, it } from 'vitest';
import type { ResourceRef } from '../../src/authz/types.js';
import { listedExperimentId, listedExperiments, narrowedRequest, refuseCamelTwins, type ExperimentList } from '../../src/proxy/after/narrow-experiments.js';
import { filterSearchAnswer, narrowToReadableExperiments } from '../../src/proxy/hooks/search-hooks.js';
import type { HookCall, HookContext } from '../../src/proxy/hooks/types.js';

/**
 * The experiments a runs or traces search names, read as MLflow reads them: MLflow runs ids through
 * Python's int() and, before 3.17, takes a field's camelCase JSON name too (the later key winning).
 * flowgate decides on plain decimal ids under their snake_case names only; anything MLflow could read
 * as another experiment is a 400.
 */
const RUNS: ExperimentList = { in: 'body', shape: 'experiment_ids' };
const TRACES: ExperimentList = { in: 'body', shape: 'trace_locations' };
const TRACES_GET: ExperimentList = { in: 'query', field: 'experiment_ids' };
const none = new URLSearchParams();
const location = (id: unknown) => ({ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: id } });

function refusal(run: () => unknown): { code?: string; status?: number; message?: string } | undefined {
  try {
    run();
  } catch (e) {
    return e as { code?: string; status?: number; message?: string };
  }
  return undefined;
}

/** Every spelling Python's int() reads as experiment 1 (or 10), which flowgate's grants are not keyed by. */
const NON_CANONICAL = ['01', ' 1', '1 ', '+1', '1_0', '\u0661', '0x1', '-1', '', '1.0', '1e0', '00'];

describe('listedExperimentId', () => {
  it.each(['0', '1', '42', '9223372036854775807'])('takes plain decimal %j as it is', (id) => {
    expect(listedExperimentId(id, 'experiment_ids')).toBe(id);
  });

  it.each(NON_CANONICAL)('refuses %j with a 400 in MLflow\'s error shape', (id) => {
    expect(refusal(() => listedExperimentId(id, 'experiment_ids'))).toMatchObject({ code: 'INVALID_PARAMETER_VALUE', status: 400 });
  });

  it('takes a JSON integer as its decimal text (older MLflow stringifies it), only where JSON.parse holds it exactly', () => {
    expect(listedExperimentId(1, 'experiment_ids')).toBe('1');
    expect(listedExperimentId(0, 'experiment_ids')).toBe('0');
    for (const id of [2 ** 53, 1e21, -1, 1.5, Infinity, NaN, true, null, {}, ['1']])
      expect(refusal(() => listedExperimentId(id, 'experiment_ids')), String(id)).toMatchObject({ status: 400 });
  });
});

describe('listedExperiments', () => {
  it.each(NON_CANONICAL)('refuses %j in a runs search, a trace location and a traces query', (id) => {
    expect(refusal(() => listedExperiments(RUNS, { experiment_ids: ['2', id] }, none))).toMatchObject({ status: 400 });
    expect(refusal(() => listedExperiments(TRACES, { locations: [location('2'), location(id)] }, none))).toMatchObject({ status: 400 });
    const q = new URLSearchParams([['experiment_ids', '2'], ['experiment_ids', id]]);
    expect(refusal(() => listedExperiments(TRACES_GET, undefined, q))).toMatchObject({ status: 400 });
  });

  it('reads plain ids and JSON integers', () => {
    expect(listedExperiments(RUNS, { experiment_ids: ['1', 2] }, none)).toEqual(['1', '2']);
    expect(listedExperiments(TRACES, { locations: [location('3'), location(4)] }, none)).toEqual(['3', '4']);
    expect(listedExperiments(TRACES_GET, undefined, new URLSearchParams('experiment_ids=5&experiment_ids=6'))).toEqual(['5', '6']);
  });

  it.each([
    ['experimentIds beside experiment_ids', RUNS, { experiment_ids: ['1'], experimentIds: ['2'] }, 'experimentIds', 'experiment_ids'],
    ['experimentIds alone', RUNS, { experimentIds: ['2'] }, 'experimentIds', 'experiment_ids'],
    ['experimentIds in a traces search', TRACES, { locations: [location('1')], experimentIds: ['2'] }, 'experimentIds', 'experiment_ids'],
    [
      'mlflowExperiment beside mlflow_experiment',
      TRACES,
      { locations: [{ ...location('1'), mlflowExperiment: { experimentId: '2' } }] },
      'mlflowExperiment',
      'mlflow_experiment',
    ],
    ['mlflowExperiment alone', TRACES, { locations: [{ type: 'MLFLOW_EXPERIMENT', mlflowExperiment: { experiment_id: '2' } }] }, 'mlflowExperiment', 'mlflow_experiment'],
    [
      'experimentId beside experiment_id',
      TRACES,
      { locations: [{ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: '1', experimentId: '2' } }] },
      'experimentId',
      'experiment_id',
    ],
  ] as const)('refuses %s, naming the field to write', (_, where, body, twin, name) => {
    const caught = refusal(() => listedExperiments(where, body, none));
    expect(caught).toMatchObject({ code: 'INVALID_PARAMETER_VALUE', status: 400 });
    expect(caught?.message).toBe(`Parameter '${twin}' is not read here: write '${name}'`);
  });

  it('leaves a query alone: MLflow reads a GET by the fields\' own names', () => {
    expect(listedExperiments(TRACES_GET, undefined, new URLSearchParams('experiment_ids=1&experimentIds=2'))).toEqual(['1']);
  });
});

describe('narrowedRequest', () => {
  it('keeps the readable ids as the client sent them', () => {
    const body = { experiment_ids: ['1', 2, '3'], filter: 'x' };
    const { body: out } = narrowedRequest(RUNS, body, none, new Set(['1', '2']));
    expect(JSON.parse(out!.toString())).toEqual({ experiment_ids: ['1', 2], filter: 'x' });
  });

  it('keeps the readable trace locations, and a traces query\'s readable ids', () => {
    const { body: out } = narrowedRequest(TRACES, { locations: [location('1'), location('2')] }, none, new Set(['2']));
    expect(JSON.parse(out!.toString())).toEqual({ locations: [location('2')] });
    const { search } = narrowedRequest(TRACES_GET, undefined, new URLSearchParams('experiment_ids=1&experiment_ids=2&max_results=5'), new Set(['2']));
    expect(search).toBe('experiment_ids=2&max_results=5');
  });
});

describe('refuseCamelTwins', () => {
  it('refuses the other spelling of a snake_case field and nothing else', () => {
    expect(() => refuseCamelTwins({ page_token: 'a', filter: 'f', orderBy: ['x'] }, ['page_token', 'max_results', 'filter'])).not.toThrow();
    expect(refusal(() => refuseCamelTwins({ pageToken: 'a' }, ['page_token']))?.message).toBe("Parameter 'pageToken' is not read here: write 'page_token'");
    expect(refusal(() => refuseCamelTwins({ maxResults: 5 }, ['max_results']))?.message).toBe("Parameter 'maxResults' is not read here: write 'max_results'");
  });
});

/** The hooks, with a policy that lets the caller read experiment 1 only. */
describe('the search hooks', () => {
  const decided: string[] = [];
  const ctx = {
    evaluator: {
      decideNamed: (_p: unknown, _need: unknown, refs: readonly ResourceRef[]) => {
        decided.push(refs[0]!.id);
        return { allow: refs[0]!.id === '1' };
      },
    },
  } as unknown as HookContext;
  const call = (hook: string, method: string, pattern: string, body: unknown, query = new URLSearchParams()) =>
    ({
      hook,
      entry: { method, pattern },
      principal: { username: 'mallory' },
      request: { method, query, body, params: {}, headers: {} },
      refs: [],
      req: { headers: {} },
    }) as unknown as HookCall;
  const runs = (body: unknown) => call('filter_search_runs', 'POST', '/api/2.0/mlflow/runs/search', body);
  const traces = (body: unknown) => call('filter_search_traces', 'POST', '/api/3.0/mlflow/traces/search', body);
  const tracesGet = (q: string) => call('filter_search_traces', 'GET', '/api/2.0/mlflow/traces', undefined, new URLSearchParams(q));
  const loggedModels = (body: unknown) => call('filter_search_logged_models', 'POST', '/api/2.0/mlflow/logged-models/search', body);
  const experiments = (body: unknown) => call('filter_search_experiments', 'POST', '/api/2.0/mlflow/experiments/search', body);

  const refusedBy = async (run: () => unknown) => {
    try {
      await run();
    } catch (e) {
      return e as { status?: number; message?: string };
    }
    return undefined;
  };

  it.each([
    ['runs/search', () => narrowToReadableExperiments(runs({ experiment_ids: ['01'] }), ctx)],
    ['traces/search', () => narrowToReadableExperiments(traces({ locations: [location('01')] }), ctx)],
    ['GET traces', () => narrowToReadableExperiments(tracesGet('experiment_ids=01'), ctx)],
    ['logged-models/search', () => filterSearchAnswer(loggedModels({ experiment_ids: ['01'] }), ctx)],
  ])('%s refuses "01" before looking up a grant', async (_, run) => {
    decided.length = 0;
    expect(await refusedBy(run)).toMatchObject({ status: 400 });
    expect(decided).toEqual([]);
  });

  it.each([
    ['runs/search', () => narrowToReadableExperiments(runs({ experiment_ids: ['1'], experimentIds: ['2'] }), ctx), 'experimentIds'],
    ['traces/search', () => narrowToReadableExperiments(traces({ locations: [{ ...location('1'), mlflowExperiment: { experimentId: '2' } }] }), ctx), 'mlflowExperiment'],
    ['logged-models/search', () => filterSearchAnswer(loggedModels({ experiment_ids: ['1'], experimentIds: ['2'] }), ctx), 'experimentIds'],
    ['logged-models/search page token', () => filterSearchAnswer(loggedModels({ experiment_ids: ['1'], pageToken: 'x' }), ctx), 'pageToken'],
    ['logged-models/search page size', () => filterSearchAnswer(loggedModels({ experiment_ids: ['1'], maxResults: 5 }), ctx), 'maxResults'],
    ['experiments/search page token', () => filterSearchAnswer(experiments({ pageToken: 'x' }), ctx), 'pageToken'],
    ['experiments/search page size', () => filterSearchAnswer(experiments({ max_results: 1, maxResults: 50000 }), ctx), 'maxResults'],
  ])('%s refuses the camelCase twin', async (_, run, twin) => {
    expect(await refusedBy(run)).toMatchObject({ status: 400, message: expect.stringContaining(`'${twin}'`) });
  });

  it('a logged-model search lists only a list of ids', async () => {
    expect(await refusedBy(() => filterSearchAnswer(loggedModels({ experiment_ids: '12' }), ctx))).toMatchObject({ status: 400 });
  });

  it('narrows runs and traces searches on the plain ids', async () => {
    decided.length = 0;
    const pass = await narrowToReadableExperiments(runs({ experiment_ids: ['1', '2', 1] }), ctx);
    expect(JSON.parse(pass.body!.toString())).toEqual({ experiment_ids: ['1', 1] });
    expect(decided).toEqual(['1', '2', '1']);
    const got = await narrowToReadableExperiments(tracesGet('experiment_ids=2&experiment_ids=1'), ctx);
    expect(got.search).toBe('experiment_ids=1');
  });
});
