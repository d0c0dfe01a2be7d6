import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, ADMIN, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { compareVersions, rowExistsIn } from '../../src/authz/catalog-versions.js';
import type { HttpMethod } from '../../src/authz/types.js';
import { runningMlflowVersion, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps, type Op, type Outcome } from '../helpers/python-ops.js';

/**
 * The real MLflow (pinned, from PyPI; FLOWGATE_MLFLOW_VERSION picks another release) behind flowgate,
 * driven by the real MLflow Python client as personas holding READ, EDIT, MANAGE and NO_PERMISSIONS
 * through direct grants, group grants and the default permission. A case whose routes the running
 * release lacks (by src/authz/catalog-versions.json) is skipped.
 */
let mlflow: MlflowServer;
let version = '';
/** Whether the running MLflow release has this catalog row. */
const has = (method: HttpMethod, pattern: string) => rowExistsIn({ method, pattern }, version);
const lacks = (what: string) => `MLflow ${version} has no ${what} routes`;
let fg: TestFlowgate;
let fgDefaultRead: TestFlowgate;
const tokens: Record<string, string> = {};
const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();
const suffix = Date.now().toString(36);

const admin = () => request(fg.url);
async function adminCall(method: 'post' | 'patch', path: string, body: object) {
  const res = await admin()[method](path).set('Authorization', adminAuth()).send(body);
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as Record<string, unknown>;
}
const as = (user: string, ops: Op[], target = fg) => runOps(mlflow.venv, target.url, user, tokens[user]!, ops);
const asAdmin = (ops: Op[]) => runOps(mlflow.venv, fg.url, ADMIN.username, ADMIN.token, ops);
const value = (o: Outcome | undefined) => {
  if (!o?.ok) throw new Error(`expected success, got ${JSON.stringify(o)}`);
  return o.value;
};
const outcome = (o: Outcome | undefined) => (o?.ok ? 'ok' : o?.error);

let A = '';
let B = '';
let baseRun = '';
let runInB = '';
const runFor: Record<string, string> = {};
const PERSONAS = ['reader', 'editor', 'manager', 'blocked', 'nobody'];

beforeAll(async () => {
  mlflow = await startMlflowServer();
  version = await runningMlflowVersion(mlflow);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  fgDefaultRead = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DEFAULT_PERMISSION: 'READ' }, fg.dir + '-read');

  for (const u of [...PERSONAS, 'pager']) {
    await adminCall('post', '/api/2.0/mlflow/users/create', { username: u });
    tokens[u] = (await adminCall('patch', '/api/2.0/mlflow/permissions/users/access-token', { username: u, expiration: inDays(1) })).token as string;
  }
  for (const g of ['team-edit', 'team-blocked']) await adminCall('post', '/api/2.0/mlflow/permissions/groups', { group_name: g });
  for (const [g, u] of [['team-edit', 'editor'], ['team-edit', 'blocked'], ['team-blocked', 'blocked']] as const)
    await adminCall('post', `/api/2.0/mlflow/permissions/groups/${g}/users`, { username: u });

  const setup = await asAdmin([
    ['A', 'create_experiment', `shared-${suffix}`],
    ['B', 'create_experiment', `private-${suffix}`],
  ]);
  A = value(setup.A) as string;
  B = value(setup.B) as string;
  const runs = await asAdmin([
    ['base', 'create_run', A],
    ['inB', 'create_run', B],
    ...PERSONAS.map((p): Op => [p, 'create_run', A]),
  ]);
  baseRun = value(runs.base) as string;
  runInB = value(runs.inB) as string;
  for (const p of PERSONAS) runFor[p] = value(runs[p]) as string;
  const seeded = await asAdmin([['seed', 'log_artifact', baseRun, 'seed.txt']]);
  value(seeded.seed);

  await adminCall('post', `/api/2.0/mlflow/permissions/users/reader/experiments/${A}`, { permission: 'READ' });
  await adminCall('post', `/api/2.0/mlflow/permissions/groups/team-edit/experiments/${A}`, { permission: 'EDIT' });
  await adminCall('post', `/api/2.0/mlflow/permissions/users/manager/experiments/${A}`, { permission: 'MANAGE' });
  await adminCall('post', `/api/2.0/mlflow/permissions/groups/team-blocked/experiments/${A}`, { permission: 'NO_PERMISSIONS' });
}, 600_000);

afterAll(async () => {
  await fg?.close();
  await fgDefaultRead?.close();
  await mlflow?.stop();
  if (fg) {
    removeDir(fg.dir);
    removeDir(fg.dir + '-read');
  }
});

const experimentOps = (p: string): Op[] => [
  ['get_experiment', 'get_experiment', A],
  ['get_run', 'get_run', baseRun],
  ['list_artifacts', 'list_artifacts', baseRun],
  ['download_artifact', 'download_artifact', baseRun, 'seed.txt'],
  ['log_metric', 'log_metric', baseRun],
  ['upload_artifact', 'log_artifact', baseRun, `${p}.txt`],
  ['delete_run', 'delete_run', runFor[p] ?? runFor.nobody!],
];

const DENIED = 'PERMISSION_DENIED';
const READ_ONLY = { get_experiment: 'ok', get_run: 'ok', list_artifacts: 'ok', download_artifact: 'ok', log_metric: DENIED, upload_artifact: DENIED, delete_run: DENIED };
const EDIT = { ...READ_ONLY, log_metric: 'ok', upload_artifact: 'ok' };
const MANAGE = { ...EDIT, delete_run: 'ok' };
const NOTHING = Object.fromEntries(Object.keys(READ_ONLY).map((k) => [k, DENIED]));

describe('experiments, runs and artifacts', () => {
  it.each([
    ['reader', 'direct READ', READ_ONLY],
    ['editor', 'group EDIT', EDIT],
    ['manager', 'direct MANAGE', MANAGE],
    ['blocked', 'group EDIT + another group NO_PERMISSIONS', NOTHING],
    ['nobody', 'no grant, default NO_PERMISSIONS', NOTHING],
  ])('%s (%s)', async (persona, _how, expected) => {
    const results = await as(persona, experimentOps(persona));
    expect(Object.fromEntries(Object.entries(results).map(([k, v]) => [k, outcome(v)]))).toEqual(expected);
    if (expected.download_artifact === 'ok') expect(results.download_artifact).toEqual({ ok: true, value: 'hello from admin' });
  });

  it('the default permission applies to a user without grants (FLOWGATE_DEFAULT_PERMISSION=READ)', async () => {
    // the second flowgate has its own store: give it the same user
    const r = request(fgDefaultRead.url);
    await r.post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'nobody' });
    const t = await r.patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'nobody', expiration: inDays(1) });
    const results = await runOps(mlflow.venv, fgDefaultRead.url, 'nobody', t.body.token, experimentOps('nobody').filter(([l]) => l !== 'delete_run'));
    const { delete_run: _ignored, ...expected } = READ_ONLY;
    expect(Object.fromEntries(Object.entries(results).map(([k, v]) => [k, outcome(v)]))).toEqual(expected);
  });

  it('the creator of an experiment gets MANAGE on it', async () => {
    const created = await as('nobody', [['create', 'create_experiment', `mine-${suffix}`]]);
    const id = value(created.create) as string;
    const after = await as('nobody', [
      ['get', 'get_experiment', id],
      ['run', 'create_run', id],
    ]);
    expect(outcome(after.get)).toBe('ok');
    expect(outcome(after.run)).toBe('ok');
    const grants = await admin().get(`/api/2.0/mlflow/permissions/experiments/${id}/users`).set('Authorization', adminAuth());
    expect(grants.body.users).toEqual([expect.objectContaining({ username: 'nobody', permission: 'MANAGE' })]);
  });

  it('search_runs is narrowed to readable experiments before MLflow sees it', async () => {
    const results = await as('reader', [
      ['both', 'search_runs', [A, B]],
      ['onlyB', 'search_runs', [B]],
    ]);
    const both = value(results.both) as string[];
    expect(both).toContain(baseRun);
    expect(both).not.toContain(runInB);
    expect(value(results.onlyB)).toEqual([]);
  });
});

describe('search pagination', () => {
  it('pages of max_results readable experiments, nothing repeated or skipped, across three pages', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `page-${suffix}-${String(i).padStart(2, '0')}`);
    const created = await asAdmin(names.map((n): Op => [n, 'create_experiment', n]));
    const readable = names.filter((_, i) => i % 2 === 1);
    for (const n of readable) await adminCall('post', `/api/2.0/mlflow/permissions/users/pager/experiments/${value(created[n]) as string}`, { permission: 'READ' });
    const results = await as('pager', [['pages', 'search_experiment_pages', 2, `page-${suffix}`]]);
    const pages = value(results.pages) as string[][];
    expect(pages).toHaveLength(3);
    for (const page of pages) expect(page).toHaveLength(2);
    expect(pages.flat().sort()).toEqual(readable);
  });
});

describe('experiment ids MLflow reads another way (a NO_PERMISSIONS grant under the default READ)', () => {
  // `snooper` may read everything (FLOWGATE_DEFAULT_PERMISSION=READ) but B, on which she holds NO_PERMISSIONS.
  let auth = '';
  const search = (body: object, target = fgDefaultRead.url, authorization = auth) =>
    request(target).post('/api/2.0/mlflow/runs/search').set('Authorization', authorization).send(body);
  const runIds = (body: { runs?: Array<{ info: { run_id: string } }> }) => (body.runs ?? []).map((r) => r.info.run_id);
  beforeAll(async () => {
    const r = request(fgDefaultRead.url);
    const as = (call: request.Test) => call.set('Authorization', adminAuth());
    expect((await as(r.post('/api/2.0/mlflow/users/create')).send({ username: 'snooper' })).status).toBeLessThan(300);
    const t = await as(r.patch('/api/2.0/mlflow/permissions/users/access-token')).send({ username: 'snooper', expiration: inDays(1) });
    auth = `Basic ${Buffer.from(`snooper:${t.body.token as string}`).toString('base64')}`;
    expect((await as(r.post(`/api/2.0/mlflow/permissions/users/snooper/experiments/${B}`)).send({ permission: 'NO_PERMISSIONS' })).status).toBeLessThan(300);
  });

  it('reads A and not B as written', async () => {
    const both = await search({ experiment_ids: [A, B] });
    expect(runIds(both.body)).toContain(baseRun);
    expect(runIds(both.body)).not.toContain(runInB);
  });

  it(`"0<id>" is B to MLflow (Python's int()), and refused through flowgate`, async () => {
    const direct = await request(mlflow.url).post('/api/2.0/mlflow/runs/search').send({ experiment_ids: [`0${B}`] });
    expect(runIds(direct.body)).toContain(runInB);
    for (const body of [{ experiment_ids: [`0${B}`] }, { experiment_ids: [A, `0${B}`] }]) {
      const res = await search(body);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(JSON.stringify(res.body)).not.toContain(runInB);
    }
    const traces = await request(fgDefaultRead.url).get(`/api/2.0/mlflow/traces?experiment_ids=0${B}`).set('Authorization', auth);
    expect(traces.status).toBe(400);
  });

  it('the camelCase alias experimentIds is refused through flowgate (MLflow before 3.17 lets it win)', async () => {
    const body = { experiment_ids: [A], experimentIds: [B] };
    const direct = await request(mlflow.url).post('/api/2.0/mlflow/runs/search').send(body);
    if (compareVersions(version, '3.17.0') < 0) expect(runIds(direct.body)).toContain(runInB);
    else expect(direct.status).toBe(400);
    for (const sent of [body, { experimentIds: [B] }]) {
      const res = await search(sent);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.message).toBe("Parameter 'experimentIds' is not read here: write 'experiment_ids'");
      expect(JSON.stringify(res.body)).not.toContain(runInB);
    }
  });
});

describe('registered models, versions and aliases', () => {
  const model = `churn-${suffix}`;
  beforeAll(async () => {
    const made = await asAdmin([
      ['model', 'create_registered_model', model],
      ['v1', 'create_model_version', model, baseRun],
      ['v2', 'create_model_version', model, baseRun],
      ['v3', 'create_model_version', model, baseRun],
      ['alias', 'set_alias', model, 'champion', '1'],
    ]);
    for (const o of Object.values(made)) value(o);
    await adminCall('post', `/api/2.0/mlflow/permissions/users/reader/registered-models/${model}`, { permission: 'READ' });
    await adminCall('post', `/api/2.0/mlflow/permissions/groups/team-edit/registered-models/${model}`, { permission: 'EDIT' });
    await adminCall('post', `/api/2.0/mlflow/permissions/users/manager/registered-models/${model}`, { permission: 'MANAGE' });
  });

  it.each([
    ['reader', { get: 'ok', alias: 'ok', set_alias: DENIED, delete_version: DENIED }, '2'],
    ['editor', { get: 'ok', alias: 'ok', set_alias: 'ok', delete_version: DENIED }, '2'],
    ['manager', { get: 'ok', alias: 'ok', set_alias: 'ok', delete_version: 'ok' }, '3'],
    ['nobody', { get: DENIED, alias: DENIED, set_alias: DENIED, delete_version: DENIED }, '2'],
  ])('%s', async (persona, expected, version) => {
    const results = await as(persona, [
      ['get', 'get_registered_model', model],
      ['alias', 'get_by_alias', model, 'champion'],
      ['set_alias', 'set_alias', model, `c-${persona}`, '1'],
      ['delete_version', 'delete_model_version', model, version],
    ]);
    expect(Object.fromEntries(Object.entries(results).map(([k, v]) => [k, outcome(v)]))).toEqual(expected);
  });

  it('a model version cannot copy artifacts of a run the caller may not read', async () => {
    const r = await as('editor', [
      ['byRunId', 'create_model_version_from', model, `mlflow-artifacts:/${A}/${baseRun}/artifacts/model`, runInB],
      ['bySource', 'create_model_version_from', model, `mlflow-artifacts:/${B}/${runInB}/artifacts/model`, ''],
      ['bucket', 'create_model_version_from', model, 's3://elsewhere/model', ''],
      ['own', 'create_model_version_from', model, `mlflow-artifacts:/${A}/${baseRun}/artifacts/model`, baseRun],
    ]);
    expect(outcome(r.byRunId)).toBe(DENIED);
    expect(outcome(r.bySource)).toBe(DENIED);
    expect(outcome(r.bucket)).toBe(DENIED);
    expect(outcome(r.own)).toBe('ok');
  });

  it('search hides models the caller cannot read', async () => {
    const r = await as('nobody', [['search', 'search_registered_models']]);
    expect(value(r.search)).not.toContain(model);
    const s = await as('reader', [['search', 'search_registered_models']]);
    expect(value(s.search)).toContain(model);
  });
});

describe('prompts', () => {
  it('a prompt registered by a user is theirs; others need a prompt grant to load it', async () => {
    const name = `summarizer-${suffix}`;
    const reg = await as('editor', [
      ['register', 'register_prompt', name, 'Summarize: {{text}}'],
      ['load', 'load_prompt', name, 1],
    ]);
    expect(reg.register).toEqual({ ok: true, value: 1 });
    expect(reg.load).toEqual({ ok: true, value: 'Summarize: {{text}}' });
    expect(outcome((await as('reader', [['load', 'load_prompt', name, 1]])).load)).toBe(DENIED);
    const grants = await admin().get(`/api/2.0/mlflow/permissions/prompts/${name}/users`).set('Authorization', adminAuth());
    expect(grants.body.users).toEqual([expect.objectContaining({ username: 'editor', permission: 'MANAGE' })]);
    await adminCall('post', `/api/2.0/mlflow/permissions/users/reader/prompts/${name}`, { permission: 'READ' });
    expect((await as('reader', [['load', 'load_prompt', name, 1]])).load).toEqual({ ok: true, value: 'Summarize: {{text}}' });
    // a grant on a registered model of the same kind of name does not open prompts
    await adminCall('post', `/api/2.0/mlflow/permissions/users/nobody/registered-models/${name}`, { permission: 'READ' });
    expect(outcome((await as('nobody', [['load', 'load_prompt', name, 1]])).load)).toBe(DENIED);
  });
});

describe('traces', () => {
  it('are logged by an editor and found only by those who may read the experiment', async () => {
    const logged = await as('editor', [['trace', 'log_trace', A, 'e2e-span']]);
    const traceId = value(logged.trace) as string;
    const editorSees = await as('editor', [['s', 'search_traces', A]]);
    expect(value(editorSees.s)).toContain(traceId);
    const readerSees = await as('reader', [['s', 'search_traces', A]]);
    expect(value(readerSees.s)).toContain(traceId);
    const nobody = await as('nobody', [
      ['s', 'search_traces', A],
      ['log', 'log_trace', A, 'intruder'],
    ]);
    expect(nobody.s?.ok ? nobody.s.value : []).toEqual([]);
    expect(outcome(nobody.log)).not.toBe('ok');
  });
});

describe('second resources in one request', () => {
  it("a batch of metrics attached to a logged model in an experiment the caller may not edit is refused and lands nowhere", async () => {
    const models = await asAdmin([
      ['inA', 'create_logged_model', A],
      ['inB', 'create_logged_model', B],
    ]);
    const modelInA = value(models.inA) as string;
    const modelInB = value(models.inB) as string;
    const run = runFor.editor!;
    const tried = await as('editor', [
      ['mine', 'log_batch_on_model', run, 'acc_on_a', modelInA],
      ['theirs', 'log_batch_on_model', run, 'acc_on_b', modelInB],
    ]);
    expect(tried.mine).toEqual({ ok: true, value: true });
    expect(outcome(tried.theirs)).toBe(DENIED);
    const keys = await asAdmin([['keys', 'metric_keys', run]]);
    expect(value(keys.keys)).toContain('acc_on_a');
    expect(value(keys.keys)).not.toContain('acc_on_b');
  });
});

describe('evaluation datasets', () => {
  it('follow the rights on every experiment they belong to', async ({ skip }) => {
    skip(!has('POST', '/api/3.0/mlflow/datasets/create'), lacks('evaluation dataset'));
    const made = await asAdmin([
      ['inA', 'create_dataset', `ds-a-${suffix}`, [A]],
      ['inAB', 'create_dataset', `ds-ab-${suffix}`, [A, B]],
    ]);
    const inA = value(made.inA) as string;
    const inAB = value(made.inAB) as string;
    const reader = await as('reader', [
      ['get', 'get_dataset', inA],
      ['add', 'add_dataset_record', inA, 'from reader'],
      ['getAB', 'get_dataset', inAB],
    ]);
    expect(reader.get).toEqual({ ok: true, value: `ds-a-${suffix}` });
    expect(outcome(reader.add)).toBe(DENIED);
    expect(outcome(reader.getAB)).toBe(DENIED);
    const editor = await as('editor', [
      ['add', 'add_dataset_record', inA, 'from editor'],
      ['addAB', 'add_dataset_record', inAB, 'from editor'],
    ]);
    expect(editor.add).toEqual({ ok: true, value: true });
    expect(outcome(editor.addAB)).toBe(DENIED);
    expect(outcome((await as('nobody', [['get', 'get_dataset', inA]])).get)).toBe(DENIED);
  });
});

describe('GenAI issues and label schemas by id', () => {
  const call = (user: string, method: 'get' | 'patch' | 'delete', path: string, body?: object) => {
    const r = admin()[method](path).set('Authorization', `Basic ${Buffer.from(`${user}:${tokens[user]}`).toString('base64')}`);
    return body ? r.send(body) : r;
  };
  it('an issue follows the rights on its experiment (READ to see, EDIT to update)', async ({ skip }) => {
    skip(!has('PATCH', '/api/3.0/mlflow/issues/:issue_id'), lacks('issue'));
    const issue = await adminCall('post', '/api/3.0/mlflow/issues', { experiment_id: A, name: 'slow answers', description: 'e2e' });
    const issueId = (issue.issue as { issue_id: string }).issue_id;

    expect((await call('reader', 'get', `/api/3.0/mlflow/issues/${issueId}`)).status).toBe(200);
    expect((await call('reader', 'patch', `/api/3.0/mlflow/issues/${issueId}`, { issue_id: issueId, name: 'renamed by reader' })).status).toBe(403);
    expect((await call('editor', 'patch', `/api/3.0/mlflow/issues/${issueId}`, { issue_id: issueId, name: 'renamed by editor' })).status).toBe(200);
    expect((await call('nobody', 'get', `/api/3.0/mlflow/issues/${issueId}`)).status).toBe(403);
    const seen = await call('reader', 'get', `/api/3.0/mlflow/issues/${issueId}`);
    expect(seen.body.issue.name).toBe('renamed by editor');
  });

  it('a label schema follows the rights on its experiment (READ to see, MANAGE to change)', async ({ skip }) => {
    skip(!has('GET', '/api/3.0/mlflow/label-schemas/get'), lacks('label schema'));
    const schema = await adminCall('post', '/api/3.0/mlflow/label-schemas/create', {
      experiment_id: A,
      name: `tone-${suffix}`,
      type: 'FEEDBACK',
      input: { text: {} },
    });
    const schemaId = (schema.label_schema as { schema_id: string }).schema_id;

    expect((await call('reader', 'get', `/api/3.0/mlflow/label-schemas/get?schema_id=${schemaId}`)).status).toBe(200);
    expect((await call('nobody', 'get', `/api/3.0/mlflow/label-schemas/get?schema_id=${schemaId}`)).status).toBe(403);
    expect((await call('editor', 'delete', '/api/3.0/mlflow/label-schemas/delete', { schema_id: schemaId })).status).toBe(403);
    expect((await call('manager', 'delete', '/api/3.0/mlflow/label-schemas/delete', { schema_id: schemaId })).status).toBe(200);
    expect((await call('reader', 'get', `/api/3.0/mlflow/label-schemas/get?schema_id=${schemaId}`)).status).toBe(404);
  });
});

describe('review queues by id', () => {
  const call = (user: string, method: 'get' | 'post', path: string, body?: object) => {
    const r = admin()[method](path).set('Authorization', `Basic ${Buffer.from(`${user}:${tokens[user]}`).toString('base64')}`);
    return body ? r.send(body) : r;
  };
  const Q = '/api/3.0/mlflow/review-queues';
  it("follow MLflow's rules: READ and assignment to open, EDIT to route work in, EDIT and assignment to review, MANAGE to reshape", async ({ skip }) => {
    skip(!has('GET', '/api/3.0/mlflow/review-queues/get'), lacks('review queue'));
    const traced = await asAdmin([['t', 'log_trace', A, 'to review']]);
    const traceId = value(traced.t) as string;
    const created = await adminCall('post', `${Q}/create`, {
      experiment_id: A,
      name: `triage-${suffix}`,
      queue_type: 'CUSTOM',
      users: ['reader', 'editor'],
    });
    const queueId = (created.review_queue as { queue_id: string }).queue_id;

    // Listing: EDIT sees every queue of the experiment, READ only those it is assigned to.
    const other = await adminCall('post', `${Q}/create`, { experiment_id: A, name: `backlog-${suffix}`, queue_type: 'CUSTOM', users: ['editor'] });
    const otherId = (other.review_queue as { queue_id: string }).queue_id;
    const listedBy = async (user: string) =>
      ((await call(user, 'get', `${Q}/list?experiment_id=${A}`)).body.review_queues as Array<{ queue_id: string }>).map((q) => q.queue_id).sort();
    expect(await listedBy('editor')).toEqual([queueId, otherId].sort());
    expect(await listedBy('reader')).toEqual([queueId]);
    expect((await call('nobody', 'get', `${Q}/list?experiment_id=${A}`)).status).toBe(403);

    // Opening: READ and assigned (reader), or MANAGE (manager); not EDIT alone, not without rights.
    expect((await call('reader', 'get', `${Q}/get?queue_id=${queueId}`)).status).toBe(200);
    expect((await call('manager', 'get', `${Q}/get?queue_id=${queueId}`)).status).toBe(200);
    expect((await call('nobody', 'get', `${Q}/get?queue_id=${queueId}`)).status).toBe(403);
    expect((await call('blocked', 'get', `${Q}/items/list?queue_id=${queueId}`)).status).toBe(403);

    // Routing work in takes EDIT; READ is not enough even when assigned.
    expect((await call('reader', 'post', `${Q}/items/add`, { queue_id: queueId, item_ids: [traceId] })).status).toBe(403);
    expect((await call('editor', 'post', `${Q}/items/add`, { queue_id: queueId, item_ids: [traceId] })).status).toBe(200);
    const listed = await call('reader', 'get', `${Q}/items/list?queue_id=${queueId}`);
    expect(listed.status).toBe(200);
    const itemId = (listed.body.items as Array<{ item_id: string }>)[0]!.item_id;

    // Reviewing takes EDIT and assignment; the attribution is the caller's, whatever the client says.
    expect((await call('reader', 'post', `${Q}/items/set-status`, { queue_id: queueId, item_id: itemId, status: 'COMPLETE' })).status).toBe(403);
    expect((await call('manager', 'post', `${Q}/items/set-status`, { queue_id: queueId, item_id: itemId, status: 'COMPLETE' })).status).toBe(403);
    const reviewed = await call('editor', 'post', `${Q}/items/set-status`, {
      queue_id: queueId,
      item_id: itemId,
      status: 'COMPLETE',
      completed_by: 'manager',
    });
    expect(reviewed.status).toBe(200);
    const afterReview = await call('reader', 'get', `${Q}/items/list?queue_id=${queueId}`);
    expect(afterReview.body.items[0]).toMatchObject({ status: 'COMPLETE', completed_by: 'editor' });
    // The protobuf-JSON spelling of the same field is no way around it.
    const camel = await call('editor', 'post', `${Q}/items/set-status`, { queue_id: queueId, item_id: itemId, status: 'DECLINED', completedBy: 'manager' });
    expect(camel.status).toBe(200);
    expect((await call('reader', 'get', `${Q}/items/list?queue_id=${queueId}`)).body.items[0]).toMatchObject({ status: 'DECLINED', completed_by: 'editor' });

    // Reshaping takes MANAGE; once the manager takes the editor off the queue, the editor's next
    // review is refused at once (flowgate forgets the queue's users when it forwards the update).
    expect((await call('editor', 'post', `${Q}/update`, { queue_id: queueId, users: ['editor', 'reader', 'pager'], update_users: true })).status).toBe(403);
    expect((await call('manager', 'post', `${Q}/update`, { queue_id: queueId, users: ['reader'], update_users: true })).status).toBe(200);
    expect((await call('editor', 'post', `${Q}/items/set-status`, { queue_id: queueId, item_id: itemId, status: 'PENDING' })).status).toBe(403);
    // By name, the same test: the editor is no longer assigned; the reader is, the manager manages.
    const byName = `${Q}/get-by-name?experiment_id=${A}&name=triage-${suffix}`;
    expect((await call('editor', 'get', byName)).status).toBe(403);
    expect((await call('reader', 'get', byName)).body.review_queue.queue_id).toBe(queueId);
    expect((await call('manager', 'get', byName)).status).toBe(200);
    // A second `name` is no way into a queue the caller is not assigned to, in either order.
    for (const names of [`name=triage-${suffix}&name=backlog-${suffix}`, `name=backlog-${suffix}&name=triage-${suffix}`]) {
      const twice = await call('reader', 'get', `${Q}/get-by-name?experiment_id=${A}&${names}`);
      expect(twice.status).toBe(400);
      expect(twice.body.error_code).toBe('INVALID_PARAMETER_VALUE');
    }
    const nameless = await call('reader', 'get', `${Q}/get-by-name?experiment_id=${A}`);
    expect(nameless.status).toBe(400);
    expect(nameless.body.error_code).toBe('INVALID_PARAMETER_VALUE');

    expect((await call('editor', 'post', `${Q}/items/remove`, { queue_id: queueId, item_ids: [itemId] })).status).toBe(403);
    expect((await call('editor', 'post', `${Q}/delete`, { queue_id: queueId })).status).toBe(403);
    expect((await call('manager', 'post', `${Q}/items/remove`, { queue_id: queueId, item_ids: [itemId] })).status).toBe(200);
    expect((await call('manager', 'post', `${Q}/delete`, { queue_id: queueId })).status).toBe(200);
    expect((await call('reader', 'get', `${Q}/get?queue_id=${queueId}`)).status).toBe(404);
  });
});
