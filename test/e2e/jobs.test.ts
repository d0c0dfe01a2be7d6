import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { endpointsOnProvider, GENAI_MLFLOW_ENV, logTraces, startFakeProvider } from '../helpers/genai.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { serializedJudge } from '../helpers/scorers.js';

/**
 * Issue 35, jobs with owners: the real MLflow (pinned) with job execution on, its judges answered by a
 * fake OpenAI-compatible provider on loopback. A non-administrator runs a judge on their traces and
 * polls the job; flowgate recorded them as its starter, so they read and cancel it and find it in a
 * search, and nobody else but an administrator does, not even another editor of the experiment.
 */
const AJAX = '/ajax-api/3.0/mlflow';
const JUDGE = serializedJudge('polite', 'Is {{ outputs }} polite? Answer yes or no.');

describe('MLflow jobs behind flowgate: their starters’, and administrators’', () => {
  let mlflow: MlflowServer;
  let provider: Awaited<ReturnType<typeof startFakeProvider>>;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens, tokens } = jsonCaller(() => fg.url);
  let experimentId = '';
  let traceIds: string[] = [];
  let annJob = '';

  const as = (who: string | undefined, method: string, path: string, body?: unknown) =>
    fetch(fg.url + path, {
      method,
      headers: { ...(who ? { Authorization: basicOf(who) } : {}), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const asAdmin = (method: string, path: string, body?: unknown) => call(method, path, body);
  const runJudge = (who: string) =>
    as(who, 'POST', `${AJAX}/scorer/invoke`, { experiment_id: experimentId, serialized_scorer: JUDGE, trace_ids: traceIds, log_assessments: true });
  const searchIds = async (who: string) => {
    const r = await as(who, 'POST', '/ajax-api/3.0/jobs/search', {});
    expect(r.status).toBe(200);
    return ((await r.json()) as { jobs: Array<{ job_id: string }> }).jobs.map((j) => j.job_id);
  };

  beforeAll(async () => {
    provider = await startFakeProvider(() => '{"result": "yes", "rationale": "It thanks the reader."}');
    mlflow = await startMlflowServer({
      env: {
        ...GENAI_MLFLOW_ENV,
        OPENAI_API_KEY: 'sk-fake-for-tests',
        OPENAI_API_BASE: `${provider.url}/v1`,
        OPENAI_BASE_URL: `${provider.url}/v1`,
      },
      startTimeoutMs: 120_000,
    });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann', 'bob', 'cat']);
    experimentId = (await asAdmin('POST', '/api/2.0/mlflow/experiments/create', { name: 'judged' })).experiment_id as string;
    for (const user of ['ann', 'bob']) await asAdmin('POST', `/api/2.0/mlflow/permissions/users/${user}/experiments/${experimentId}`, { permission: 'EDIT' });
    traceIds = await logTraces(mlflow.venv, fg.url, 'ann', tokens.ann!, experimentId);
  }, 300_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    await provider?.close();
  });

  it('a user who may edit the experiment runs a judge on its traces and polls the job to its result', async () => {
    const started = await runJudge('ann');
    expect(started.status, await started.clone().text()).toBe(200);
    const jobs = ((await started.json()) as { jobs: Array<{ job_id: string }> }).jobs;
    expect(jobs.length).toBeGreaterThan(0);
    annJob = jobs[0]!.job_id;
    let job: { status?: string; result?: unknown; error_message?: string | null } = {};
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const polled = await as('ann', 'GET', `${AJAX}/jobs/${annJob}`);
      expect(polled.status).toBe(200);
      job = (await polled.json()) as typeof job;
      if (job.status === 'SUCCEEDED' || job.status === 'FAILED' || job.status === 'TIMEOUT') break;
      await new Promise((r) => setTimeout(r, 500));
    }
    expect(job.status, JSON.stringify(job)).toBe('SUCCEEDED');
    expect(JSON.stringify(job.result), JSON.stringify(job.result)).toContain('yes');
    // The judge's model was called: through the fake provider, not anywhere else.
    expect(provider.seen.some((r) => r.url.endsWith('/chat/completions'))).toBe(true);
  }, 180_000);

  it('nobody else reads or cancels it, by either route, not even another editor of the experiment', async () => {
    for (const who of ['bob', 'cat']) {
      for (const [method, path] of [
        ['GET', `${AJAX}/jobs/${annJob}`],
        ['GET', `/ajax-api/3.0/jobs/${annJob}`],
        ['PATCH', `${AJAX}/jobs/cancel/${annJob}`],
        ['PATCH', `/ajax-api/3.0/jobs/cancel/${annJob}`],
      ] as const) {
        const r = await as(who, method, path);
        expect(r.status, `${who} ${method} ${path}`).toBe(403);
        const body = (await r.json()) as { error_code: string; message: string };
        expect(body.error_code).toBe('PERMISSION_DENIED');
        expect(body.message).not.toContain('ann');
      }
    }
    // A job that does not exist is refused as one someone else started: ids are no oracle.
    const missing = await as('bob', 'GET', `${AJAX}/jobs/00000000-0000-0000-0000-000000000000`);
    expect(missing.status).toBe(403);
    expect(await missing.json()).toEqual(await (await as('bob', 'GET', `${AJAX}/jobs/${annJob}`)).json());
    // The starter reads it through MLflow's FastAPI route too; an administrator reads anyone's.
    expect((await as('ann', 'GET', `/ajax-api/3.0/jobs/${annJob}`)).status).toBe(200);
    expect((await asAdmin('GET', `${AJAX}/jobs/${annJob}`)).status).toBe('SUCCEEDED');
  });

  it("a search answers each caller their own jobs, and an administrator every job", async () => {
    const bobStarted = await runJudge('bob');
    expect(bobStarted.status).toBe(200);
    const bobJobs = ((await bobStarted.json()) as { jobs: Array<{ job_id: string }> }).jobs.map((j) => j.job_id);
    const annSees = await searchIds('ann');
    const bobSees = await searchIds('bob');
    expect(annSees).toContain(annJob);
    for (const id of bobJobs) expect(annSees).not.toContain(id);
    expect(bobSees.sort()).toEqual([...bobJobs].sort());
    expect(await searchIds('cat')).toEqual([]);
    const all = ((await asAdmin('POST', '/ajax-api/3.0/jobs/search', {})).jobs as Array<{ job_id: string }>).map((j) => j.job_id);
    expect(all).toEqual(expect.arrayContaining([annJob, ...bobJobs]));
  });

  it('the starter cancels their own job', async () => {
    const r = await as('bob', 'POST', `${AJAX}/genai/evaluate/invoke`, { experiment_id: experimentId, trace_ids: traceIds, serialized_scorers: [JUDGE] });
    expect(r.status, await r.clone().text()).toBe(200);
    const jobId = ((await r.json()) as { job_id: string }).job_id;
    expect((await as('ann', 'PATCH', `${AJAX}/jobs/cancel/${jobId}`)).status).toBe(403);
    const cancelled = await as('bob', 'PATCH', `${AJAX}/jobs/cancel/${jobId}`);
    expect(cancelled.status, await cancelled.clone().text()).toBe(200);
    expect(((await cancelled.json()) as { status: string }).status).toMatch(/CANCELED|SUCCEEDED|FAILED/);
  });

  it('a registered judge runs by its name only for someone who may read it, in a scorer run and in prompt optimization', async () => {
    await asAdmin('POST', '/api/3.0/mlflow/scorers/register', { experiment_id: experimentId, name: 'house-judge', serialized_scorer: JUDGE });
    const byName = (who: string) =>
      as(who, 'POST', `${AJAX}/scorer/invoke`, { experiment_id: experimentId, serialized_scorer: JUDGE, scorer_name: 'house-judge', scorer_version: 1, trace_ids: traceIds });
    // EDIT on the experiment is not READ on its scorers (scorers have grants of their own, as in MLflow).
    const refused = await byName('ann');
    expect(refused.status).toBe(403);
    await asAdmin('POST', `/api/2.0/mlflow/permissions/users/ann/scorers/${experimentId}/house-judge`, { permission: 'READ' });
    // flowgate lets it through; MLflow 3.17.2 itself then fails on a registered scorer by name (its handler
    // passes the stored scorer object where it expects JSON text: a 500 from MLflow, not a refusal).
    const passed = await byName('ann');
    expect([200, 500], await passed.clone().text()).toContain(passed.status);
    expect((await byName('bob')).status).toBe(403);
  });

  it('issue detection needs EDIT on the experiment, USE on the secret it decrypts and on the endpoint it calls; its job is its starter’s', async () => {
    const { secretId } = await endpointsOnProvider(asAdmin, provider.url, 'detector', ['detector']);
    const detect = (who: string, extra: Record<string, string>) =>
      as(who, 'POST', `${AJAX}/issues/invoke`, { experiment_id: experimentId, trace_ids: traceIds, categories: ['correctness'], provider: 'openai', model: 'gpt-4o-mini', ...extra });
    const grantOn = (segment: string, name: string) =>
      asAdmin('POST', `/api/2.0/mlflow/permissions/users/ann/gateways/${segment}/${name}`, { permission: 'USE' });

    expect((await detect('ann', { secret_id: secretId })).status).toBe(403);
    expect((await detect('ann', { endpoint_name: 'detector' })).status).toBe(403);
    expect((await detect('cat', {})).status).toBe(403);
    await grantOn('secrets', 'detector-key');
    await grantOn('endpoints', 'detector');
    const started = await detect('ann', { secret_id: secretId, endpoint_name: 'detector' });
    expect(started.status, await started.clone().text()).toBe(200);
    const { job_id: jobId } = (await started.json()) as { job_id: string };
    expect((await as('ann', 'GET', `${AJAX}/jobs/${jobId}`)).status).toBe(200);
    expect((await as('bob', 'GET', `${AJAX}/jobs/${jobId}`)).status).toBe(403);
    expect(await searchIds('ann')).toContain(jobId);
  });

  it('prompt optimization needs EDIT on the experiment, EDIT on the source prompt and USE on the reflection endpoint; the job is decided by its experiment', async () => {
    const registered = await runPython(
      mlflow.venv,
      `
import mlflow
mlflow.genai.register_prompt(name="tone", template="Answer {{question}} kindly.")
mlflow.genai.register_prompt(name="secret-tone", template="Answer {{question}} curtly.")
print("@@OK@@")
`,
      { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token, MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0' },
    );
    expect(registered.stdout, registered.stderr.slice(-2000)).toContain('@@OK@@');
    await endpointsOnProvider(asAdmin, provider.url, 'reflector', ['reflector']);

    const optimize = (who: string, source: string, reflection = 'gateway:/reflector') =>
      as(who, 'POST', '/api/3.0/mlflow/prompt-optimization/jobs', {
        experiment_id: experimentId,
        source_prompt_uri: source,
        config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', optimizer_config_json: JSON.stringify({ reflection_model: reflection, max_metric_calls: 2 }) },
      });
    expect((await optimize('ann', 'prompts:/tone/1')).status).toBe(403); // no right on the prompt yet
    await asAdmin('POST', '/api/2.0/mlflow/permissions/users/ann/prompts/tone', { permission: 'READ' });
    expect((await optimize('ann', 'prompts:/tone/1')).status).toBe(403); // READ: the worker registers its result as a new version of the prompt
    await asAdmin('PATCH', '/api/2.0/mlflow/permissions/users/ann/prompts/tone', { permission: 'EDIT' });
    expect((await optimize('ann', 'prompts:/tone/1')).status).toBe(403); // no USE on the endpoint yet
    await asAdmin('POST', '/api/2.0/mlflow/permissions/users/ann/gateways/endpoints/reflector', { permission: 'USE' });
    expect((await optimize('ann', 'prompts:/secret-tone/1')).status).toBe(403);
    expect((await optimize('ann', 'secret-tone')).status).toBe(403);
    for (const spelling of ['PROMPTS:/secret-tone/1', 'prompts://host/secret-tone/1', 'prompts:/secret-tone/1?x', 'secret-tone@latest'])
      expect((await optimize('ann', spelling)).status, spelling).toBe(400);
    expect((await optimize('ann', 'prompts:/tone/1', 'Gateway:/reflector')).status).toBe(400);
    expect((await optimize('cat', 'prompts:/tone/1')).status).toBe(403);
    // A scorer the config names is loaded from the experiment: READ on it.
    const withScorers = (who: string, scorers: string[]) =>
      as(who, 'POST', '/api/3.0/mlflow/prompt-optimization/jobs', {
        experiment_id: experimentId,
        source_prompt_uri: 'prompts:/tone/1',
        config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', scorers, optimizer_config_json: JSON.stringify({ reflection_model: 'gateway:/reflector', max_metric_calls: 2 }) },
      });
    await asAdmin('POST', '/api/3.0/mlflow/scorers/register', { experiment_id: experimentId, name: 'closed-judge', serialized_scorer: JUDGE });
    expect((await withScorers('ann', ['closed-judge'])).status).toBe(403);

    const started = await optimize('ann', 'prompts:/tone@latest');
    expect(started.status, await started.clone().text()).toBe(200);
    const jobId = ((await started.json()) as { job: { job_id: string } }).job.job_id;
    // Its starter polls it as a job; the experiment's other editor does not.
    expect((await as('ann', 'GET', `${AJAX}/jobs/${jobId}`)).status).toBe(200);
    expect((await as('bob', 'GET', `${AJAX}/jobs/${jobId}`)).status).toBe(403);
    // By job id through prompt optimization's own routes: the job's experiment decides (MLflow's rule).
    const byExperiment = `/api/3.0/mlflow/prompt-optimization/jobs/${jobId}`;
    expect((await as('cat', 'GET', byExperiment)).status).toBe(403);
    expect((await as('bob', 'GET', byExperiment)).status).toBe(200);
    expect((await as('bob', 'DELETE', byExperiment)).status).toBe(403); // EDIT: not MANAGE
    const cancelled = await as('bob', 'POST', `${byExperiment}/cancel`, {});
    expect(cancelled.status, await cancelled.clone().text()).toBe(200);
    expect((await as('cat', 'POST', `${byExperiment}/cancel`, {})).status).toBe(403);
  });

  it("a judge whose model is a gateway endpoint needs USE on it wherever it is handed over: MLflow's worker calls it unseen", async () => {
    await endpointsOnProvider(asAdmin, provider.url, 'judge', ['judge-model']);
    const onEndpoint = serializedJudge('gateway-judge', 'Is {{ outputs }} polite?', 'gateway:/judge-model');
    const calls = () => provider.seen.length;
    const before = calls();
    const run = () => as('bob', 'POST', `${AJAX}/scorer/invoke`, { experiment_id: experimentId, serialized_scorer: onEndpoint, trace_ids: traceIds });
    expect((await run()).status).toBe(403);
    expect((await as('bob', 'POST', `${AJAX}/genai/evaluate/invoke`, { experiment_id: experimentId, trace_ids: traceIds, serialized_scorers: [JUDGE, onEndpoint] })).status).toBe(403);
    expect((await as('bob', 'POST', '/api/3.0/mlflow/scorers/register', { experiment_id: experimentId, name: 'gateway-judge', serialized_scorer: onEndpoint })).status).toBe(403);
    const misspelt = serializedJudge('gateway-judge', 'Is {{ outputs }} polite?', 'Gateway:/judge-model');
    expect((await as('bob', 'POST', `${AJAX}/scorer/invoke`, { experiment_id: experimentId, serialized_scorer: misspelt, trace_ids: traceIds })).status).toBe(400);
    expect(calls()).toBe(before);
    await asAdmin('POST', '/api/2.0/mlflow/permissions/users/bob/gateways/endpoints/judge-model', { permission: 'READ' });
    expect((await run()).status).toBe(403); // READ lists it in the judge form; spending it is USE
    await asAdmin('PATCH', '/api/2.0/mlflow/permissions/users/bob/gateways/endpoints/judge-model', { permission: 'USE' });
    const started = await run();
    expect(started.status, await started.clone().text()).toBe(200);
  });

  it('someone who may not edit the experiment starts nothing; submitting a job by name is for administrators', async () => {
    const refused = await runJudge('cat');
    expect(refused.status).toBe(403);
    const submitted = await as('ann', 'POST', '/ajax-api/3.0/jobs/', { job_name: 'invoke_scorer', params: { experiment_id: experimentId } });
    expect(submitted.status).toBe(403);
  });
});
