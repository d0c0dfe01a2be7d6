import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { endpointsOnProvider, GENAI_MLFLOW_ENV, startFakeProvider } from '../helpers/genai.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { callingAs, serializedJudge } from '../helpers/scorers.js';

/**
 * A prompt optimization naming a registered scorer, against the real MLflow (pinned): its job worker
 * loads each name that is not a built-in as the experiment's registered scorer at its latest version
 * (`get_scorer(name=…)`, mlflow/genai/optimize/job.py) and runs that judge, which calls its gateway
 * endpoint from MLflow's process, unseen by flowgate. `house-judge`'s first version judges on another
 * provider; its latest calls `judge-model`. READ on the scorer is not USE on that endpoint.
 * Both the pinned release and 3.18.0 (whose worker tells built-ins apart otherwise). (test/security/jobs.test.ts
 * holds the shapes against a scripted MLflow.)
 */
const OPTIMIZE = '/api/3.0/mlflow/prompt-optimization/jobs';

describe.each([
  { release: 'pinned', version: undefined },
  { release: '3.18.0', version: '3.18.0' },
])('prompt-optimization/jobs naming a registered scorer (MLflow $release)', ({ version }) => {
  let mlflow: MlflowServer;
  let provider: Awaited<ReturnType<typeof startFakeProvider>>;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens } = jsonCaller(() => fg.url);
  const as = callingAs(() => fg.url, basicOf);
  let experimentId = '';

  const optimize = (scorers: string[]) =>
    as('ann', 'POST', OPTIMIZE, {
      experiment_id: experimentId,
      source_prompt_uri: 'prompts:/tone/1',
      config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', scorers, optimizer_config_json: JSON.stringify({ reflection_model: 'gateway:/reflector', max_metric_calls: 2 }) },
    });
  /** Every optimization job MLflow has in the experiment (as the administrator). */
  const optimizations = async () => ((await call('POST', `${OPTIMIZE}/search`, { experiment_id: experimentId })).jobs as unknown[] | undefined)?.length ?? 0;

  beforeAll(async () => {
    provider = await startFakeProvider(() => '{"result": "yes", "rationale": "Kind."}');
    mlflow = await startMlflowServer({ env: GENAI_MLFLOW_ENV, startTimeoutMs: 120_000, ...(version === undefined ? {} : { version }) });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann']);
    experimentId = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: 'optimized' })).experiment_id as string;
    const registered = await runPython(
      mlflow.venv,
      `
import mlflow
mlflow.genai.register_prompt(name="tone", template="Answer {{question}} kindly.")
print("@@OK@@")
`,
      { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token, MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0' },
    );
    expect(registered.stdout, registered.stderr.slice(-2000)).toContain('@@OK@@');
    await endpointsOnProvider(call, provider.url, 'judge', ['judge-model', 'reflector']);
    for (const model of ['openai:/gpt-4o-mini', 'gateway:/judge-model'])
      await call('POST', '/api/3.0/mlflow/scorers/register', { experiment_id: experimentId, name: 'house-judge', serialized_scorer: serializedJudge('house-judge', 'Is {{ outputs }} kind?', model) });
    const permissions = '/api/2.0/mlflow/permissions/users/ann';
    await call('POST', `${permissions}/experiments/${experimentId}`, { permission: 'EDIT' });
    await call('POST', `${permissions}/prompts/tone`, { permission: 'EDIT' });
    await call('POST', `${permissions}/scorers/${experimentId}/house-judge`, { permission: 'READ' });
    await call('POST', `${permissions}/gateways/endpoints/reflector`, { permission: 'USE' });
    // READ on the judge's endpoint lists it in the judge form; spending it is USE.
    await call('POST', `${permissions}/gateways/endpoints/judge-model`, { permission: 'READ' });
  }, 300_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    await provider?.close();
  });

  it('MLflow hands the worker the latest version by name alone, and its judge calls the gateway endpoint', async () => {
    const latest = (await call('GET', `/api/3.0/mlflow/scorers/get?experiment_id=${experimentId}&name=house-judge`)).scorer as Record<string, unknown>;
    expect(String(latest.scorer_version)).toBe('2');
    expect(latest.serialized_scorer).toContain('gateway:/judge-model');
  });

  it('READ on the scorer without USE on its latest judge’s endpoint: refused, and MLflow starts nothing', async () => {
    const before = await optimizations();
    const refused = await optimize(['house-judge']);
    expect(refused.status, await refused.clone().text()).toBe(403);
    expect(((await refused.json()) as { error_code: string }).error_code).toBe('PERMISSION_DENIED');
    expect(await optimizations()).toBe(before);
  });

  it('with USE on the endpoint the optimization starts', async () => {
    await call('PATCH', `/api/2.0/mlflow/permissions/users/ann/gateways/endpoints/judge-model`, { permission: 'USE' });
    const before = await optimizations();
    const started = await optimize(['house-judge']);
    expect(started.status, await started.clone().text()).toBe(200);
    expect(await optimizations()).toBe(before + 1);
  });
});
