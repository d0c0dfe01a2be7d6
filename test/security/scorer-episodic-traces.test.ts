import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basic, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { scorerAttacker, serializedJudge } from '../helpers/scorers.js';

/*
 * A MemAlign judge (MLflow's `MemoryAugmentedJudge`, `memory_augmented_judge_data` in a serialized scorer)
 * remembers the traces it was aligned on by id (`episodic_trace_ids`). The job worker that runs it (a
 * scorer run, a GenAI evaluation, online scoring of a registered scorer) loads each one with
 * `mlflow.get_trace` from MLflow's own process, which flowgate never sees, and puts its inputs, outputs
 * and human feedback into the prompt its judge's model gets and into the rationale it logs. Mallory may
 * edit experiment 1 (her trace `tr-a1`); `tr-b2` is in experiment 2, which she may not read. A bypass
 * is any of her requests reaching MLflow with a judge that recalls `tr-b2`. MLflow is scripted (the
 * installed MLflow refuses a MemAlign judge without DSPy, so the real one cannot take this payload here).
 */
const INVOKE = '/ajax-api/3.0/mlflow/scorer/invoke';
const EVALUATE = '/ajax-api/3.0/mlflow/genai/evaluate/invoke';
const REGISTER = '/api/3.0/mlflow/scorers/register';
const TRACES: Record<string, string> = { 'tr-a1': '1', 'tr-b2': '2' };

/** A judge aligned with MemAlign on `traceIds`, as `MemoryAugmentedJudge.model_dump()` serializes it. */
const memAlign = (traceIds: unknown, name = 'correctness') =>
  JSON.stringify({
    ...JSON.parse(serializedJudge(name)),
    instructions_judge_pydantic_data: null,
    memory_augmented_judge_data: {
      base_judge: JSON.parse(serializedJudge(name)),
      episodic_trace_ids: traceIds,
      semantic_memory: [],
      reflection_lm: 'openai:/gpt-4o-mini',
      retrieval_k: 5,
      embedding_model: 'openai:/text-embedding-3-small',
      embedding_dim: 512,
    },
  });
/** The same judge inside an ensemble (`make_scorer_ensemble`). */
const inEnsemble = (inner: string) => JSON.stringify({ ...JSON.parse(serializedJudge('ensemble')), instructions_judge_pydantic_data: null, ensemble_scorer_data: { ensemble_fn: 'mean', scorers: [JSON.parse(inner)] } });

let fg: TestFlowgate;
let mlflow: Awaited<ReturnType<typeof startStubUpstream>>;
let token = '';
const api = () => request(fg.url);
const pathOf = (url: string) => new URL(url, 'http://x').pathname;
const reached = (path: string) => mlflow.seen.filter((r) => pathOf(r.url) === path).length;
const post = (path: string, body: unknown) => api().post(path).set('Authorization', basic('mallory', token)).set('Content-Type', 'application/json').send(JSON.stringify(body));

const invoke = (scorer: string) => post(INVOKE, { experiment_id: '1', trace_ids: ['tr-a1'], serialized_scorer: scorer });
const evaluate = (scorer: string) => post(EVALUATE, { experiment_id: '1', trace_ids: ['tr-a1'], serialized_scorers: [serializedJudge('plain'), scorer] });
const register = (scorer: string) => post(REGISTER, { experiment_id: '1', name: 'correctness', serialized_scorer: scorer });

beforeAll(async () => {
  mlflow = await startStubUpstream((req) => {
    const url = new URL(req.url, 'http://x');
    const trace = url.pathname.match(/^\/api\/3\.0\/mlflow\/traces\/(tr-[0-9a-z]+)$/)?.[1];
    if (trace !== undefined && req.method === 'GET') {
      const experiment = TRACES[trace];
      if (experiment === undefined) return { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: `Trace ${trace} not found` } };
      return { status: 200, body: { trace: { trace_info: { trace_id: trace, trace_location: { mlflow_experiment: { experiment_id: experiment } } } } } };
    }
    if (url.pathname === '/api/3.0/mlflow/scorers/get') return { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'Scorer not found' } };
    if (url.pathname === INVOKE) return { status: 200, body: { jobs: [{ job_id: `job-${mlflow.seen.length}`, trace_ids: ['tr-a1'] }] } };
    if (url.pathname === EVALUATE) return { status: 200, body: { job_id: `job-${mlflow.seen.length}`, run_id: 'r1' } };
    if (url.pathname === REGISTER) return { status: 200, body: { version: 1, scorer_id: 'sc-1', experiment_id: 1, name: 'correctness', serialized_scorer: '{}', creation_time: 1 } };
    return { status: 200, body: {} };
  });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  token = await scorerAttacker(fg.url, []);
});

afterAll(async () => {
  await fg?.close();
  await mlflow?.close();
});

describe("mallory's MemAlign judges recall only traces she may read", () => {
  it('the controls: a judge recalling her own trace runs, is evaluated with and is registered', async () => {
    const own = memAlign(['tr-a1']);
    for (const [path, send] of [
      [INVOKE, invoke],
      [EVALUATE, evaluate],
      [REGISTER, register],
    ] as const) {
      const before = reached(path);
      const r = await send(own);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(reached(path)).toBe(before + 1);
    }
  });

  it("is refused when the judge recalls a trace of an experiment she may not read, in every route that hands a judge to a worker", async () => {
    const recalling = [memAlign(['tr-b2']), memAlign(['tr-a1', 'tr-b2']), inEnsemble(memAlign(['tr-b2']))];
    for (const [path, send] of [
      [INVOKE, invoke],
      [EVALUATE, evaluate],
      [REGISTER, register],
    ] as const)
      for (const scorer of recalling) {
        const before = reached(path);
        const r = await send(scorer);
        expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(403);
        expect(r.body.error_code).toBe('PERMISSION_DENIED');
        expect(reached(path), path).toBe(before);
      }
  });

  it('a recalled trace id that is not a string is refused (400) before MLflow sees it', async () => {
    const before = reached(INVOKE);
    for (const ids of [[2], [{ trace_id: 'tr-b2' }], 'tr-b2']) {
      const r = await invoke(memAlign(ids));
      expect(r.status, JSON.stringify(ids)).toBe(400);
    }
    expect(reached(INVOKE)).toBe(before);
  });
});
