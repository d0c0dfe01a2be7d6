import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { serializedJudge } from '../helpers/scorers.js';

/*
 * Issue 35, jobs with owners, from mallory's side. alice and mallory may both edit experiment 1; each
 * starts jobs there. The MLflow in front of which flowgate runs is scripted (its answers are what the
 * real one answers: see test/e2e/jobs.test.ts), so every answer shape is under the test's control. A
 * bypass is any request about alice's job reaching MLflow on mallory's behalf, what MLflow answers about
 * it in an answer mallory gets, or an id of alice's in a search answer.
 */
const JOB_ROUTES = ['/ajax-api/3.0/mlflow/jobs', '/ajax-api/3.0/jobs'] as const;

let fg: TestFlowgate;
let mlflow: Server;
const seen: Array<{ method: string; url: string; auth: string | undefined }> = [];
let nextJob = 0;
/** What the scripted MLflow answers a search with: every job, whoever started it. */
const allJobs: string[] = [];
let searchAnswer: 'json' | 'garbage' = 'json';
const tokens: Record<string, string> = {};
/**
 * The registered scorers of experiment 1, as MLflow's `scorers/get` answers them: each name's versions,
 * the last the highest (what it answers without a version, and what the optimization worker loads).
 * `gw-judge`'s first version calls no gateway endpoint; its latest calls `secret-endpoint`.
 */
const REGISTERED: Record<string, string[]> = {
  'open-judge': [serializedJudge('open-judge')],
  'gw-judge': [serializedJudge('gw-judge'), serializedJudge('gw-judge', 'Is {{ outputs }} polite?', 'gateway:/secret-endpoint')],
  'own-gw-judge': [serializedJudge('own-gw-judge', 'Is {{ outputs }} kind?', 'gateway:/her-endpoint')],
  'secret-judge': [serializedJudge('secret-judge', 'Is {{ outputs }} leaking?', 'gateway:/secret-endpoint')],
};
/** A database collation's match: MLflow finds `gw-judge` when asked for `GW-JUDGE`. */
const COLLATED: Record<string, string> = { 'GW-JUDGE': 'gw-judge' };

/** MLflow's `scorers/get`: the version asked for, or the highest without one; 404 for what it does not have. */
function scorerAnswer(q: URLSearchParams): [number, unknown] {
  const name = COLLATED[q.get('name') ?? ''] ?? q.get('name') ?? '';
  if (name === 'broken-judge') return [500, { error_code: 'INTERNAL_ERROR', message: 'database is locked' }];
  const versions = q.get('experiment_id') === '1' ? REGISTERED[name] : undefined;
  const version = q.has('version') ? Number(q.get('version')) : (versions?.length ?? 0);
  const text = versions?.[version - 1];
  if (text === undefined) return [404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: `Scorer with name '${name}' not found for experiment 1.` }];
  return [200, { scorer: { experiment_id: 1, scorer_name: name, scorer_version: version, serialized_scorer: text, creation_time: 1, scorer_id: `sc-${name}` } }];
}
const as = (user: string) => (user === 'admin' ? adminAuth() : basic(user, tokens[user]!));

function scriptedMlflow(): Promise<string> {
  mlflow = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization });
      const send = (status: number, json: unknown) => {
        const text = JSON.stringify(json);
        res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
        res.end(text);
      };
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/api/3.0/mlflow/scorers/get') return send(...scorerAnswer(url.searchParams));
      if (url.pathname === '/api/3.0/mlflow/gateway/endpoints/get') return send(200, { endpoint: { endpoint_id: `e-${url.searchParams.get('name')}`, name: url.searchParams.get('name') } });
      if (url.pathname.endsWith('/scorer/invoke')) {
        const parsed = JSON.parse(body || '{}') as { claim?: string; fail?: boolean };
        if (parsed.fail) return send(400, { error_code: 'INVALID_PARAMETER_VALUE', message: 'no traces' });
        // A lying answer may name a job someone else started: it must not become the caller's.
        const ids = parsed.claim ? [parsed.claim] : [`job-${++nextJob}`, `job-${++nextJob}`];
        allJobs.push(...ids.filter((id) => !allJobs.includes(id)));
        return send(200, { jobs: ids.map((job_id) => ({ job_id, trace_ids: ['t'] })) });
      }
      if (url.pathname.endsWith('/jobs/search')) {
        if (searchAnswer === 'garbage') {
          res.writeHead(200, { 'Content-Type': 'application/json' });
          return res.end(`{"jobs": [{"job_id": "${allJobs[0]}"`);
        }
        return send(200, { jobs: [...allJobs, 'job-nobody-started-here'].map((job_id) => ({ job_id, status: 'SUCCEEDED', creator: null })) });
      }
      if (url.pathname.endsWith('/prompt-optimization/jobs') && req.method === 'POST') {
        const id = `opt-${++nextJob}`;
        allJobs.push(id);
        return send(200, { job: { job_id: id, experiment_id: '1' } });
      }
      const dataset = /\/datasets\/([^/]+)\/experiment-ids$/.exec(url.pathname);
      // The look-up flowgate makes for a dataset: `d-mine` belongs to experiment 1, any other to experiment 3.
      if (dataset) return send(200, { experiment_ids: [dataset[1] === 'd-mine' ? '1' : '3'] });
      const optimization = /\/prompt-optimization\/jobs\/([^/]+)(?:\/cancel)?$/.exec(url.pathname);
      // The look-up flowgate makes: a job's experiment is the one it was created in. MLflow answers these
      // routes for a job of any kind; only a prompt optimization has a source prompt (`eval-…`: an evaluation's).
      if (optimization) {
        const id = optimization[1]!;
        const source = id.startsWith('eval-') ? {} : { source_prompt_uri: 'prompts:/tone/1' };
        return send(200, { job: { job_id: id, experiment_id: id.startsWith('opt-other') ? '3' : '1', ...source, state: { status: 'JOB_STATUS_RUNNING' } } });
      }
      const job = /\/jobs\/(?:cancel\/)?([^/]+)$/.exec(url.pathname);
      if (job) return send(200, { job_id: decodeURIComponent(job[1]!), status: 'RUNNING' });
      send(200, {});
    });
  });
  return new Promise((resolve) => mlflow.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(mlflow.address() as AddressInfo).port}`)));
}

const api = () => request(fg.url);
const start = async (user: string, body: Record<string, unknown> = {}) => {
  const r = await api().post('/ajax-api/3.0/mlflow/scorer/invoke').set('Authorization', as(user)).send({ experiment_id: '1', serialized_scorer: '{}', trace_ids: ['t'], ...body });
  return { status: r.status, ids: ((r.body as { jobs?: Array<{ job_id: string }> }).jobs ?? []).map((j) => j.job_id) };
};
const reached = (id: string) => seen.filter((s) => s.url.includes(id) || s.url.includes(encodeURIComponent(id)));

let aliceJobs: string[] = [];
let malloryJobs: string[] = [];

beforeAll(async () => {
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: await scriptedMlflow() });
  for (const username of ['alice', 'mallory']) {
    await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username }).expect(201);
    tokens[username] = (await api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username })).body.token;
    await api().post(`/api/2.0/mlflow/permissions/users/${username}/experiments/1`).set('Authorization', adminAuth()).send({ permission: 'EDIT' }).expect(201);
  }
  aliceJobs = (await start('alice')).ids;
  malloryJobs = (await start('mallory')).ids;
});

afterAll(async () => {
  await fg?.close();
  await new Promise((r) => mlflow?.close(r));
});

describe("mallory and alice's jobs", () => {
  it('mallory reads and cancels her own jobs (the control: the same requests about hers pass)', async () => {
    expect(aliceJobs).toHaveLength(2);
    for (const base of JOB_ROUTES) {
      await api().get(`${base}/${malloryJobs[0]}`).set('Authorization', as('mallory')).expect(200);
      await api().patch(`${base}/cancel/${malloryJobs[0]}`).set('Authorization', as('mallory')).expect(200);
    }
  });

  it("never reaches MLflow about alice's job, by any spelling of its path", async () => {
    const a = aliceJobs[0]!;
    const m = malloryJobs[0]!;
    const attempts: Array<[string, string]> = [];
    for (const base of JOB_ROUTES)
      attempts.push(
        ['GET', `${base}/${a}`],
        ['PATCH', `${base}/cancel/${a}`],
        ['GET', `${base}/${a}/`],
        ['GET', `${base}/${a}?job_id=${m}`],
        ['GET', `${base}/./${a}`],
        ['GET', `${base}/${m}/../${a}`],
        ['GET', `${base}/${m}/..%2F${a}`],
        ['GET', `${base}/${encodeURIComponent(a).replace('-', '%2D')}`],
        ['GET', `${base}//${a}`],
        ['PATCH', `${base}/cancel/${m}/../${a}`],
        ['PATCH', `${base}/cancel//${a}`],
        ['POST', `${base}/${a}`],
        ['DELETE', `${base}/${a}`],
      );
    attempts.push(['GET', `/ajax-api/3.0/mlflow/jobs/${a.toUpperCase()}`], ['GET', `/api/3.0/mlflow/jobs/${a}`], ['GET', `/ajax-api/2.0/mlflow/jobs/${a}`]);
    const before = reached(a).length;
    for (const [method, path] of attempts) {
      const r = await api()[method.toLowerCase() as 'get'](path).set('Authorization', as('mallory')).set('X-HTTP-Method-Override', 'GET');
      expect([400, 403, 404], `${method} ${path} → ${r.status}`).toContain(r.status);
      // A refusal may repeat the path mallory sent; never what MLflow answers about the job.
      expect(JSON.stringify(r.body), path).not.toContain('RUNNING');
      expect(r.body.error_code, path).toBeTypeOf('string');
    }
    expect(reached(a).length).toBe(before);
  });

  it("answers a job nobody was seen starting, and one of alice's, alike", async () => {
    const theirs = await api().get(`/ajax-api/3.0/mlflow/jobs/${aliceJobs[0]}`).set('Authorization', as('mallory'));
    const nobodys = await api().get('/ajax-api/3.0/mlflow/jobs/job-nobody-started-here').set('Authorization', as('mallory'));
    const missing = await api().get('/ajax-api/3.0/mlflow/jobs/never-existed').set('Authorization', as('mallory'));
    expect([theirs.status, nobodys.status, missing.status]).toEqual([403, 403, 403]);
    expect(nobodys.body).toEqual(theirs.body);
    expect(missing.body).toEqual(theirs.body);
    // Administrators read any job, their own record or not.
    await api().get('/ajax-api/3.0/mlflow/jobs/job-nobody-started-here').set('Authorization', adminAuth()).expect(200);
  });

  it("finds only her own jobs in a search: not alice's, not one nobody was seen starting", async () => {
    const r = await api().post('/ajax-api/3.0/jobs/search').set('Authorization', as('mallory')).send({}).expect(200);
    expect((r.body.jobs as Array<{ job_id: string }>).map((j) => j.job_id).sort()).toEqual([...malloryJobs].sort());
    const everyone = await api().post('/ajax-api/3.0/jobs/search').set('Authorization', adminAuth()).send({}).expect(200);
    expect(everyone.body.jobs).toHaveLength(allJobs.length + 1);
  });

  it('gets no search answer flowgate could not filter (fails closed)', async () => {
    searchAnswer = 'garbage';
    try {
      const r = await api().post('/ajax-api/3.0/jobs/search').set('Authorization', as('mallory')).send({});
      expect(r.status).toBeGreaterThanOrEqual(500);
      expect(r.text).not.toContain(aliceJobs[0]!);
    } finally {
      searchAnswer = 'json';
    }
  });

  it("does not become the starter of alice's job when an answer names it, nor of jobs MLflow refused to start", async () => {
    const claimed = await start('mallory', { claim: aliceJobs[1] });
    expect(claimed.ids).toEqual([aliceJobs[1]]);
    await api().get(`/ajax-api/3.0/mlflow/jobs/${aliceJobs[1]}`).set('Authorization', as('mallory')).expect(403);
    await api().get(`/ajax-api/3.0/mlflow/jobs/${aliceJobs[1]}`).set('Authorization', as('alice')).expect(200);
    const rowsBefore = await fg.store.sql.all('SELECT job_id, user_id FROM job_owners ORDER BY job_id');
    expect((await start('mallory', { fail: true })).status).toBe(400);
    expect(await fg.store.sql.all('SELECT job_id, user_id FROM job_owners ORDER BY job_id')).toEqual(rowsBefore);
  });

  it('may not submit a job by name, nor start one in an experiment she may only read', async () => {
    const submitted = await api().post('/ajax-api/3.0/jobs/').set('Authorization', as('mallory')).send({ job_name: 'invoke_scorer', params: { experiment_id: '1' } });
    expect(submitted.status).toBe(403);
    await api().post('/api/2.0/mlflow/permissions/users/mallory/experiments/2').set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
    const before = seen.length;
    expect((await start('mallory', { experiment_id: '2' })).status).toBe(403);
    expect(seen.length).toBe(before);
  });

  it('starts a prompt optimization only on a prompt she may edit (its result is registered there), under any spelling of the fields', async () => {
    const optimize = (body: Record<string, unknown>) =>
      api().post('/api/3.0/mlflow/prompt-optimization/jobs').set('Authorization', as('mallory')).send({ experiment_id: '1', config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA' }, ...body });
    // flowgate's own look-ups (a dataset's experiments) may reach MLflow; no refused create may.
    const creates = () => seen.filter((s) => s.method === 'POST' && s.url.endsWith('/prompt-optimization/jobs')).length;
    // The worker ends with register_prompt(name=<source prompt>, template=<its output>), straight to
    // MLflow's database: READ on the prompt would let her write a version of her choosing into it.
    await api().post('/api/2.0/mlflow/permissions/users/mallory/prompts/open-tone').set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
    const readOnly = creates();
    for (const source of ['prompts:/open-tone/1', 'prompts:/open-tone@production', 'open-tone']) {
      const r = await optimize({ source_prompt_uri: source });
      expect(r.status, source).toBe(403);
      expect(r.body.error_code, source).toBe('PERMISSION_DENIED');
    }
    expect(creates()).toBe(readOnly);
    await api().patch('/api/2.0/mlflow/permissions/users/mallory/prompts/open-tone').set('Authorization', adminAuth()).send({ permission: 'EDIT' }).expect(200);
    const control = await optimize({ source_prompt_uri: 'prompts:/open-tone/1' });
    expect(control.status).toBe(200);
    expect((await optimize({ source_prompt_uri: 'prompts:/open-tone/1', config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', dataset_id: 'd-mine' } })).status).toBe(200);
    const before = creates();
    const attempts: Array<[Record<string, unknown>, number]> = [
      [{ source_prompt_uri: 'prompts:/closed-tone/1' }, 403],
      [{ sourcePromptUri: 'prompts:/closed-tone/1' }, 403],
      [{ source_prompt_uri: 'prompts:/open-tone/1', sourcePromptUri: 'prompts:/closed-tone/1' }, 400],
      [{ source_prompt_uri: ['prompts:/open-tone/1', 'prompts:/closed-tone/1'] }, 400],
      [{ source_prompt_uri: 'prompts:/open-tone@x@closed-tone' }, 400],
      [{ source_prompt_uri: 'prompts:/open-tone/../closed-tone/1' }, 400],
      [{ source_prompt_uri: 'closed-tone@latest' }, 400],
      [{ source_prompt_uri: 'prompts:/open-tone/1', experiment_id: '01' }, 400],
      [{ source_prompt_uri: 'prompts:/open-tone/1', experiment_id: '2' }, 403],
      // The worker copies the dataset's records into her run: READ on the dataset's experiments.
      [{ source_prompt_uri: 'prompts:/open-tone/1', config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', dataset_id: 'd-theirs' } }, 403],
      [{ source_prompt_uri: 'prompts:/open-tone/1', config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', datasetId: 'd-theirs' } }, 403],
      [{ source_prompt_uri: 'prompts:/open-tone/1', config: { dataset_id: 'd-mine', datasetId: 'd-theirs' } }, 400],
      [{ source_prompt_uri: 'prompts:/open-tone/1', config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', optimizer_config_json: '{"reflection_model": "Gateway:/x"}' } }, 400],
      [{ source_prompt_uri: 'prompts:/open-tone/1', config: { optimizerConfigJson: 'not json' } }, 400],
      [
        {
          source_prompt_uri: 'prompts:/open-tone/1',
          config: { optimizer_config_json: '{"reflection_model": "openai:/gpt-4o"}', optimizerConfigJson: '{"reflection_model": "gateway:/closed-endpoint"}' },
        },
        400,
      ],
    ];
    for (const [body, status] of attempts) {
      const r = await optimize(body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.body.error_code, JSON.stringify(body)).toBeTypeOf('string');
    }
    expect(creates()).toBe(before);
  });

  it("starts a prompt optimization only when she may use every endpoint the judges of its registered scorers call, at their latest versions", async () => {
    const grant = (path: string, permission: string) =>
      api().post(`/api/2.0/mlflow/permissions/users/mallory/${path}`).set('Authorization', adminAuth()).send({ permission }).expect(201);
    await grant('prompts/judged-tone', 'EDIT');
    // She reads every scorer named below but `secret-judge`; she may list `secret-endpoint` (READ), not spend it.
    for (const name of ['open-judge', 'gw-judge', 'own-gw-judge', 'GW-JUDGE', 'broken-judge', 'Correctness']) await grant(`scorers/1/${name}`, 'READ');
    await grant('gateways/endpoints/secret-endpoint', 'READ');
    await grant('gateways/endpoints/her-endpoint', 'USE');
    const optimize = (scorers: unknown) =>
      api()
        .post('/api/3.0/mlflow/prompt-optimization/jobs')
        .set('Authorization', as('mallory'))
        .send({ experiment_id: '1', source_prompt_uri: 'prompts:/judged-tone/1', config: { optimizer_type: 'OPTIMIZER_TYPE_GEPA', scorers } });
    const creates = () => seen.filter((s) => s.method === 'POST' && s.url.endsWith('/prompt-optimization/jobs')).length;
    const lookups = (name: string) => seen.filter((s) => s.url.startsWith('/api/3.0/mlflow/scorers/get') && new URL(s.url, 'http://x').searchParams.get('name') === name);

    // The controls: judges on another provider, or on an endpoint she may use; a built-in, which MLflow has no registered scorer for.
    for (const scorers of [['open-judge'], ['own-gw-judge'], ['Correctness'], ['open-judge', 'own-gw-judge', 'Correctness']]) {
      const r = await optimize(scorers);
      expect(r.status, `${JSON.stringify(scorers)}: ${JSON.stringify(r.body)}`).toBe(200);
    }
    // What is looked up is the version the worker loads: the latest, asked without a version.
    expect(lookups('open-judge').length).toBeGreaterThan(0);
    expect(lookups('open-judge').every((s) => !new URL(s.url, 'http://x').searchParams.has('version'))).toBe(true);

    const before = creates();
    // `gw-judge`'s latest version calls `secret-endpoint` (its first does not): the worker would call it from MLflow's process, unseen.
    for (const scorers of [['gw-judge'], ['open-judge', 'gw-judge'], ['Correctness', 'own-gw-judge', 'gw-judge'], 'gw-judge']) {
      const r = await optimize(scorers);
      expect(r.status, JSON.stringify(scorers)).toBe(403);
      expect(r.body.error_code, JSON.stringify(scorers)).toBe('PERMISSION_DENIED');
      expect(JSON.stringify(r.body)).not.toContain('secret-endpoint');
    }
    // A scorer she may not read is refused before MLflow is asked about it (its existence is no oracle).
    expect((await optimize(['open-judge', 'secret-judge'])).status).toBe(403);
    expect(lookups('secret-judge')).toEqual([]);
    // A name MLflow stores under another spelling is not the scorer she was decided on; a look-up MLflow fails is no allow.
    expect((await optimize(['GW-JUDGE'])).status).toBe(400);
    expect((await optimize(['broken-judge'])).status).toBeGreaterThanOrEqual(500);
    expect(creates()).toBe(before);

    // USE on the endpoint (not READ, which lists it in the judge form) lets her spend it.
    await api().patch('/api/2.0/mlflow/permissions/users/mallory/gateways/endpoints/secret-endpoint').set('Authorization', adminAuth()).send({ permission: 'USE' }).expect(200);
    expect((await optimize(['open-judge', 'gw-judge'])).status).toBe(200);
    expect(creates()).toBe(before + 1);
  });

  it("reads, cancels and deletes a prompt optimization by its experiment's rights, not another experiment's", async () => {
    const read = (id: string) => api().get(`/api/3.0/mlflow/prompt-optimization/jobs/${id}`).set('Authorization', as('mallory'));
    expect((await read('opt-mine')).status).toBe(200);
    expect((await read('opt-other-1')).status).toBe(403);
    expect((await api().post('/api/3.0/mlflow/prompt-optimization/jobs/opt-other-1/cancel').set('Authorization', as('mallory')).send({})).status).toBe(403);
    // EDIT on experiment 1: cancelling is hers, deleting (MANAGE) is not.
    expect((await api().post('/api/3.0/mlflow/prompt-optimization/jobs/opt-mine/cancel').set('Authorization', as('mallory')).send({})).status).toBe(200);
    expect((await api().delete('/api/3.0/mlflow/prompt-optimization/jobs/opt-mine').set('Authorization', as('mallory'))).status).toBe(403);
    expect(seen.filter((s) => s.url.includes('opt-other-1') && s.auth === as('mallory'))).toEqual([]);
  });

  it("reaches no other kind of job through the prompt-optimization routes: an evaluation's in her own experiment stays its starter's", async () => {
    // Its id is a tag on the evaluation's run, which any reader of the experiment sees; MLflow's routes take any job id.
    const id = 'eval-alices-1';
    const r = await api().get(`/api/3.0/mlflow/prompt-optimization/jobs/${id}`).set('Authorization', as('mallory'));
    expect(r.status, r.text).toBe(404);
    expect(r.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
    expect((await api().post(`/api/3.0/mlflow/prompt-optimization/jobs/${id}/cancel`).set('Authorization', as('mallory')).send({})).status).toBe(404);
    expect((await api().delete(`/api/3.0/mlflow/prompt-optimization/jobs/${id}`).set('Authorization', as('mallory'))).status).toBe(404);
    expect(seen.filter((s) => s.url.includes(id) && s.auth === as('mallory'))).toEqual([]);
  });

  it('without credentials, learns nothing about any job', async () => {
    for (const path of [`/ajax-api/3.0/mlflow/jobs/${aliceJobs[0]}`, `/ajax-api/3.0/jobs/${aliceJobs[0]}`]) {
      const r = await api().get(path);
      expect(r.status).toBe(401);
      expect(r.text).not.toContain('RUNNING');
    }
    expect((await api().post('/ajax-api/3.0/jobs/search').send({})).status).toBe(401);
  });
});
