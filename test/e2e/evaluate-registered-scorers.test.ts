import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { endpointsOnProvider, GENAI_MLFLOW_ENV, logTraces, startFakeProvider } from '../helpers/genai.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { callingAs, pollJob, serializedJudge } from '../helpers/scorers.js';

/**
 * A GenAI evaluation (`genai/evaluate/invoke`) with registered scorers, against the real MLflow (pinned):
 * where `scorer_versions` has an integer, MLflow replaces the serialized scorer beside it by that version
 * of the experiment's scorer its `name` names, and its job worker runs it, calling the stored judge's
 * gateway endpoint unseen. EDIT on the experiment is not READ on its scorers, and READ on a scorer is not
 * USE on the endpoint its stored judge calls.
 *
 * Against the pinned release and 3.18.0: MLflow 3.17.2's handler then fails on the stored scorer itself (it
 * passes the parsed entity where it expects JSON text: its 500, before it makes a run), which 3.18.0 fixed,
 * so there the evaluation runs and the stored judge's endpoint is called.
 */
const AJAX = '/ajax-api/3.0/mlflow';
const EVALUATE = `${AJAX}/genai/evaluate/invoke`;
const JUDGE = serializedJudge('polite', 'Is {{ outputs }} polite? Answer yes or no.');

const RELEASES = [
  { release: 'the pinned release', version: undefined, runsRegistered: false },
  { release: '3.18.0', version: '3.18.0', runsRegistered: true },
] as const;

describe.each(RELEASES)('genai/evaluate/invoke naming registered scorers ($release)', ({ version, runsRegistered }) => {
  let mlflow: MlflowServer;
  let provider: Awaited<ReturnType<typeof startFakeProvider>>;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens, tokens } = jsonCaller(() => fg.url);
  let experimentId = '';
  let traceIds: string[] = [];

  const as = callingAs(() => fg.url, basicOf);
  /** An evaluation naming each registered scorer by `{"name": …}` beside its version. */
  const evaluate = (who: string, scorers: ReadonlyArray<readonly [string, number]>) =>
    as(who, 'POST', EVALUATE, {
      experiment_id: experimentId,
      trace_ids: traceIds,
      serialized_scorers: scorers.map(([name]) => JSON.stringify({ name })),
      scorer_versions: scorers.map(([, version]) => version),
    });
  const grantScorer = (user: string, name: string, permission: string) =>
    call('POST', `/api/2.0/mlflow/permissions/users/${user}/scorers/${experimentId}/${name}`, { permission });
  /** The experiment's runs: an evaluation MLflow starts makes one before its job. */
  const runCount = async () =>
    ((await call('POST', '/api/2.0/mlflow/runs/search', { experiment_ids: [experimentId], max_results: 1000 })).runs as unknown[] | undefined)?.length ?? 0;
  /** Through the gate: MLflow ran it (3.18.0), or answered its own 500 having made no run (3.17.2). */
  const ranOrMlflowFailed = async (started: Response, runs: number) => {
    if (!runsRegistered) {
      expect(started.status, await started.clone().text()).toBe(500);
      expect(await started.text()).not.toContain('PERMISSION_DENIED');
      expect(await runCount()).toBe(runs);
      return undefined;
    }
    expect(started.status, await started.clone().text()).toBe(200);
    const job = await pollJob(as, 'ann', ((await started.json()) as { job_id: string }).job_id);
    expect(job.status, JSON.stringify(job)).toBe('SUCCEEDED');
    return job;
  };

  beforeAll(async () => {
    provider = await startFakeProvider(() => '{"result": "yes", "rationale": "It thanks the reader."}');
    mlflow = await startMlflowServer({
      env: { ...GENAI_MLFLOW_ENV, OPENAI_API_KEY: 'sk-fake-for-tests', OPENAI_API_BASE: `${provider.url}/v1`, OPENAI_BASE_URL: `${provider.url}/v1` },
      startTimeoutMs: 120_000,
      ...(version === undefined ? {} : { version }),
    });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann']);
    experimentId = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: 'evaluated' })).experiment_id as string;
    await call('POST', `/api/2.0/mlflow/permissions/users/ann/experiments/${experimentId}`, { permission: 'EDIT' });
    traceIds = await logTraces(mlflow.venv, fg.url, 'ann', tokens.ann!, experimentId);
    await endpointsOnProvider(call, provider.url, 'judge', ['judge-model']);
    await call('POST', '/api/3.0/mlflow/scorers/register', { experiment_id: experimentId, name: 'house-judge', serialized_scorer: JUDGE });
    await call('POST', '/api/3.0/mlflow/scorers/register', {
      experiment_id: experimentId,
      name: 'gateway-judge',
      serialized_scorer: serializedJudge('gateway-judge', 'Is {{ outputs }} polite? Answer yes or no.', 'gateway:/judge-model'),
    });
  }, 300_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    await provider?.close();
  });

  it('EDIT on the experiment with NO_PERMISSIONS on the registered scorer: refused, and MLflow starts nothing', async () => {
    await grantScorer('ann', 'house-judge', 'NO_PERMISSIONS');
    const runs = await runCount();
    const refused = await evaluate('ann', [['house-judge', 1]]);
    expect(refused.status).toBe(403);
    const body = (await refused.json()) as { error_code: string; message: string };
    expect(body.error_code).toBe('PERMISSION_DENIED');
    expect(body.message).toContain(`${experimentId}/house-judge`);
    // The control: the same evaluation with the scorer inline (no version) is hers to run.
    expect(await runCount()).toBe(runs);
    const inline = await as('ann', 'POST', EVALUATE, { experiment_id: experimentId, trace_ids: traceIds, serialized_scorers: [JUDGE], scorer_versions: [null] });
    expect(inline.status, await inline.clone().text()).toBe(200);
  });

  it('with READ on it the evaluation passes the gate and MLflow runs the registered scorer', async () => {
    await call('PATCH', `/api/2.0/mlflow/permissions/users/ann/scorers/${experimentId}/house-judge`, { permission: 'READ' });
    await ranOrMlflowFailed(await evaluate('ann', [['house-judge', 1]]), await runCount());
    // A version the experiment's scorer does not have is MLflow's 404, for someone who may read the scorer.
    expect((await evaluate('ann', [['house-judge', 7]])).status).toBe(404);
  }, 180_000);

  it("READ on a registered judge is not USE on the gateway endpoint its stored version calls, whatever the text beside the version says", async () => {
    await grantScorer('ann', 'gateway-judge', 'READ');
    const calls = provider.seen.length;
    const runs = await runCount();
    // The text beside the version names the judge only: MLflow runs the stored one, on `judge-model`.
    const refused = await evaluate('ann', [['gateway-judge', 1]]);
    expect(refused.status, await refused.clone().text()).toBe(403);
    // Mixed with a scorer she may use, and with an inline judge on another provider beside it: still refused.
    const mixed = await as('ann', 'POST', EVALUATE, {
      experiment_id: experimentId,
      trace_ids: traceIds,
      serialized_scorers: [JUDGE, serializedJudge('gateway-judge', 'x', 'openai:/gpt-4o-mini'), JSON.stringify({ name: 'house-judge' })],
      scorer_versions: [null, 1, 1],
    });
    expect(mixed.status).toBe(403);
    await call('POST', '/api/2.0/mlflow/permissions/users/ann/gateways/endpoints/judge-model', { permission: 'READ' });
    expect((await evaluate('ann', [['gateway-judge', 1]])).status).toBe(403); // READ lists it; spending it is USE
    expect(provider.seen.length).toBe(calls);
    expect(await runCount()).toBe(runs);

    await call('PATCH', '/api/2.0/mlflow/permissions/users/ann/gateways/endpoints/judge-model', { permission: 'USE' });
    const ran = await ranOrMlflowFailed(await evaluate('ann', [['gateway-judge', 1], ['house-judge', 1]]), runs);
    // The stored judge's endpoint was called: MLflow's gateway forwarded to the provider.
    if (ran) expect(provider.seen.length).toBeGreaterThan(calls);
  }, 180_000);
});
