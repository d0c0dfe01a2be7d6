import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { endpointsOnProvider, GENAI_MLFLOW_ENV, logTraces, startFakeProvider } from '../helpers/genai.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { callingAs, pollJob, serializedJudge } from '../helpers/scorers.js';

/**
 * A scorer run (`scorer/invoke`) naming a registered scorer, against the real MLflow 3.18.0: with
 * `scorer_name` and `scorer_version` MLflow loads that stored version and its job worker runs the stored
 * judge in place of the inline `serialized_scorer`, calling the stored judge's gateway endpoint unseen by
 * flowgate. READ on the scorer is not USE on that endpoint. (MLflow 3.17.2's handler fails on a stored
 * scorer itself, its 500 before any job: test/e2e/jobs.test.ts.)
 *
 * Two fake providers tell the judges apart: the inline judge (`openai:/…`) calls `direct`, the stored
 * judge's gateway endpoint calls `gateway`.
 */
const AJAX = '/ajax-api/3.0/mlflow';
const INVOKE = `${AJAX}/scorer/invoke`;
const INLINE = serializedJudge('polite', 'Is {{ outputs }} polite? Answer yes or no.');
const VERDICT = '{"result": "yes", "rationale": "It thanks the reader."}';

describe('scorer/invoke naming a registered scorer (3.18.0)', () => {
  let mlflow: MlflowServer;
  let direct: Awaited<ReturnType<typeof startFakeProvider>>;
  let gateway: Awaited<ReturnType<typeof startFakeProvider>>;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens, tokens } = jsonCaller(() => fg.url);
  let experimentId = '';
  let traceIds: string[] = [];

  const as = callingAs(() => fg.url, basicOf);
  const invoke = (who: string, name: string | undefined, version: number | undefined) =>
    as(who, 'POST', INVOKE, {
      experiment_id: experimentId,
      trace_ids: traceIds,
      serialized_scorer: INLINE,
      ...(name === undefined ? {} : { scorer_name: name }),
      ...(version === undefined ? {} : { scorer_version: version }),
    });
  /** Every job MLflow has, whoever started it (as the administrator). */
  const jobCount = async () => ((await call('POST', '/ajax-api/3.0/jobs/search', {})).jobs as unknown[] | undefined)?.length ?? 0;
  /** Every job a started run names, polled to its end. */
  const finished = async (started: Response) => {
    expect(started.status, await started.clone().text()).toBe(200);
    const { jobs } = (await started.json()) as { jobs: Array<{ job_id: string }> };
    expect(jobs.length).toBeGreaterThan(0);
    return Promise.all(jobs.map((j) => pollJob(as, 'ann', j.job_id)));
  };

  beforeAll(async () => {
    direct = await startFakeProvider(() => VERDICT);
    gateway = await startFakeProvider(() => VERDICT);
    mlflow = await startMlflowServer({
      env: { ...GENAI_MLFLOW_ENV, OPENAI_API_KEY: 'sk-fake-for-tests', OPENAI_API_BASE: `${direct.url}/v1`, OPENAI_BASE_URL: `${direct.url}/v1` },
      startTimeoutMs: 120_000,
      version: '3.18.0',
    });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann']);
    experimentId = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: 'scored' })).experiment_id as string;
    await call('POST', `/api/2.0/mlflow/permissions/users/ann/experiments/${experimentId}`, { permission: 'EDIT' });
    traceIds = await logTraces(mlflow.venv, fg.url, 'ann', tokens.ann!, experimentId);
    await endpointsOnProvider(call, gateway.url, 'judge', ['judge-model']);
    await call('POST', '/api/3.0/mlflow/scorers/register', {
      experiment_id: experimentId,
      name: 'gateway-judge',
      serialized_scorer: serializedJudge('gateway-judge', 'Is {{ outputs }} polite? Answer yes or no.', 'gateway:/judge-model'),
    });
    await call('POST', `/api/2.0/mlflow/permissions/users/ann/scorers/${experimentId}/gateway-judge`, { permission: 'READ' });
  }, 300_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    await direct?.close();
    await gateway?.close();
  });

  it('READ on the scorer without USE on its stored judge’s endpoint: refused, and MLflow starts nothing', async () => {
    const jobs = await jobCount();
    const calls = gateway.seen.length;
    // The inline judge beside the name is one she may run: MLflow would run the stored one instead.
    const refused = await invoke('ann', 'gateway-judge', 1);
    expect(refused.status, await refused.clone().text()).toBe(403);
    expect(((await refused.json()) as { error_code: string }).error_code).toBe('PERMISSION_DENIED');
    // READ on the endpoint lists it in the judge form; spending it is USE.
    await call('POST', '/api/2.0/mlflow/permissions/users/ann/gateways/endpoints/judge-model', { permission: 'READ' });
    expect((await invoke('ann', 'gateway-judge', 1)).status).toBe(403);
    expect(await jobCount()).toBe(jobs);
    expect(gateway.seen.length).toBe(calls);

    // The control: the same inline judge without the name is hers to run.
    const inline = await finished(await invoke('ann', undefined, undefined));
    for (const job of inline) expect(job.status, JSON.stringify(job)).toBe('SUCCEEDED');
    expect(gateway.seen.length).toBe(calls);
  }, 180_000);

  it('shapes MLflow reads otherwise or not at all are refused before MLflow, and a name of another case finds nothing', async () => {
    const jobs = await jobCount();
    // MLflow takes the name and the version together or not at all (its 400 too).
    expect((await invoke('ann', 'gateway-judge', undefined)).status).toBe(400);
    const asText = await as('ann', 'POST', INVOKE, { experiment_id: experimentId, trace_ids: traceIds, serialized_scorer: INLINE, scorer_name: 'gateway-judge', scorer_version: '1' });
    expect(asText.status).toBe(400);
    const huge = JSON.stringify({ experiment_id: experimentId, trace_ids: traceIds, serialized_scorer: INLINE, scorer_name: 'gateway-judge', scorer_version: 1 });
    const rounded = await fetch(fg.url + INVOKE, {
      method: 'POST',
      headers: { Authorization: basicOf('ann'), 'Content-Type': 'application/json' },
      body: huge.replace('"scorer_version":1', '"scorer_version":9007199254740993'),
    });
    expect(rounded.status).toBe(400);
    // Another case of the name: a grant on it is READ on that name, and MLflow stores none under it (its 404).
    await call('POST', `/api/2.0/mlflow/permissions/users/ann/scorers/${experimentId}/GATEWAY-JUDGE`, { permission: 'READ' });
    expect((await invoke('ann', 'GATEWAY-JUDGE', 1)).status).toBe(404);
    // A version the scorer does not have is MLflow's 404.
    expect((await invoke('ann', 'gateway-judge', 2)).status).toBe(404);
    expect(await jobCount()).toBe(jobs);
  });

  it('with USE on the endpoint the run passes, and MLflow runs the stored judge on it', async () => {
    await call('PATCH', '/api/2.0/mlflow/permissions/users/ann/gateways/endpoints/judge-model', { permission: 'USE' });
    const calls = gateway.seen.length;
    const ran = await finished(await invoke('ann', 'gateway-judge', 1));
    for (const job of ran) expect(job.status, JSON.stringify(job)).toBe('SUCCEEDED');
    // The stored judge's endpoint was called (MLflow's gateway forwarded to its provider), not the inline judge's.
    expect(gateway.seen.length).toBeGreaterThan(calls);
  }, 180_000);
});
