import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KNOWN_ROOT_FIELDS } from '../../src/authz/graphql-policy.js';
import { adminAuth, ADMIN, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps, type Op, type Outcome } from '../helpers/python-ops.js';

/**
 * MLflow's GraphQL endpoint behind flowgate: a user with READ on experiment A gets GraphQL answers
 * for A's runs exactly as through REST, and is refused (403, MLflow never asked) for B's, however
 * the document is written.
 */
let mlflow: MlflowServer;
let fg: TestFlowgate;
const tokens: Record<string, string> = {};
const suffix = Date.now().toString(36);
const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();

let A = '';
let B = '';
let runA = '';
let runB = '';
const openModel = `gql-open-${suffix}`;
const secretModel = `gql-secret-${suffix}`;

async function adminCall(method: 'post' | 'patch', path: string, body: object) {
  const res = await request(fg.url)[method](path).set('Authorization', adminAuth()).send(body);
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as Record<string, unknown>;
}
const asAdmin = (ops: Op[]) => runOps(mlflow.venv, fg.url, ADMIN.username, ADMIN.token, ops);
const value = (o: Outcome | undefined) => {
  if (!o?.ok) throw new Error(`expected success, got ${JSON.stringify(o)}`);
  return o.value;
};

interface Answer {
  readonly status: number;
  readonly json: any;
}

/** One /graphql call as `user`: a JSON body (GET or POST), or for GET a query string. */
function gql(user: string, method: 'GET' | 'POST', doc: { query: string; variables?: object; operationName?: string } | URLSearchParams): Promise<Answer> {
  const u = new URL(fg.url);
  const body = doc instanceof URLSearchParams ? undefined : JSON.stringify(doc);
  const path = doc instanceof URLSearchParams ? `/graphql?${doc.toString()}` : '/graphql';
  const auth = user === ADMIN.username ? adminAuth() : basic(user, tokens[user]!);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: { authorization: auth, ...(body ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : {}) },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          let json: unknown;
          try {
            json = JSON.parse(text);
          } catch {
            json = text;
          }
          resolve({ status: res.statusCode ?? 0, json });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** How many /graphql requests MLflow has logged (uvicorn's access log). */
const mlflowGraphqlCount = () => (mlflow.logs().match(/\/graphql(\?[^ ]*)? HTTP\/1\.1"/g) ?? []).length;

async function waitForCount(n: number): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (mlflowGraphqlCount() < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

/** Runs `call`, expects flowgate's 403, and shows MLflow never saw it: only a later marker request reaches MLflow. */
async function expectRefusedBeforeMlflow(call: () => Promise<Answer>): Promise<Answer> {
  const before = mlflowGraphqlCount();
  const res = await call();
  expect(res.status, JSON.stringify(res.json)).toBe(403);
  expect(res.json).toMatchObject({ error_code: 'PERMISSION_DENIED' });
  const marker = await gql('reader', 'POST', { query: '{ __typename }' });
  expect(marker.status).toBe(200);
  await waitForCount(before + 1);
  expect(mlflowGraphqlCount()).toBe(before + 1);
  return res;
}

const GET_EXPERIMENT = 'query($input: MlflowGetExperimentInput!) { mlflowGetExperiment(input: $input) { experiment { experimentId name } apiError { code } } }';
const GET_RUN = `query GetRun($data: MlflowGetRunInput!) @component(name: "MLflow.ExperimentRunTracking") {
  mlflowGetRun(input: $data) {
    apiError { code message }
    run { info { runUuid experimentId } experiment { experimentId name } modelVersions { name version } data { metrics { key value } } }
  }
}`;
const BULK = `query GetMetricHistoryBulkInterval($data: MlflowGetMetricHistoryBulkIntervalInput!) {
  mlflowGetMetricHistoryBulkInterval(input: $data) { __typename metrics { runId key value step } apiError { code message } }
}`;

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  for (const u of ['reader', 'nobody']) {
    await adminCall('post', '/api/2.0/mlflow/users/create', { username: u });
    tokens[u] = (await adminCall('patch', '/api/2.0/mlflow/permissions/users/access-token', { username: u, expiration: inDays(1) })).token as string;
  }
  const exps = await asAdmin([
    ['A', 'create_experiment', `gql-a-${suffix}`],
    ['B', 'create_experiment', `gql-b-${suffix}`],
  ]);
  A = value(exps.A) as string;
  B = value(exps.B) as string;
  const runs = await asAdmin([
    ['a', 'create_run', A],
    ['b', 'create_run', B],
  ]);
  runA = value(runs.a) as string;
  runB = value(runs.b) as string;
  const setup = await asAdmin([
    ['ma', 'log_metric', runA],
    ['mb', 'log_metric', runB],
    ['open', 'create_registered_model', openModel],
    ['secret', 'create_registered_model', secretModel],
    ['v1', 'create_model_version', openModel, runA],
    ['v2', 'create_model_version', secretModel, runA],
  ]);
  for (const o of Object.values(setup)) value(o);
  await adminCall('post', `/api/2.0/mlflow/permissions/users/reader/experiments/${A}`, { permission: 'READ' });
  await adminCall('post', `/api/2.0/mlflow/permissions/users/reader/registered-models/${openModel}`, { permission: 'READ' });
}, 600_000);

afterAll(async () => {
  await fg?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

describe('GraphQL answers what REST would', () => {
  it('mlflowGetExperiment, mlflowGetRun and mlflowGetMetricHistoryBulkInterval for A', async () => {
    const exp = await gql('reader', 'POST', { query: GET_EXPERIMENT, variables: { input: { experimentId: A } } });
    expect(exp.status).toBe(200);
    expect(exp.json.data.mlflowGetExperiment.experiment).toEqual({ experimentId: A, name: `gql-a-${suffix}` });

    const run = await gql('reader', 'POST', { query: GET_RUN, variables: { data: { runId: runA } }, operationName: 'GetRun' });
    expect(run.status).toBe(200);
    expect(run.json.data.mlflowGetRun.run.info).toEqual({ runUuid: runA, experimentId: A });
    expect(run.json.data.mlflowGetRun.run.experiment.experimentId).toBe(A);
    expect(run.json.data.mlflowGetRun.run.data.metrics).toEqual([{ key: 'loss', value: 0.5 }]);

    const bulk = await gql('reader', 'POST', { query: BULK, variables: { data: { runIds: [runA], metricKey: 'loss' } } });
    expect(bulk.status).toBe(200);
    expect(bulk.json.data.mlflowGetMetricHistoryBulkInterval.metrics).toEqual([{ runId: runA, key: 'loss', value: 0.5, step: '0' }]);
  });

  it("a run's model versions are filtered to the models the caller may read", async () => {
    const asAdminUser = await gql(ADMIN.username, 'POST', { query: GET_RUN, variables: { data: { runId: runA } } });
    expect(asAdminUser.json.data.mlflowGetRun.run.modelVersions.map((v: { name: string }) => v.name).sort()).toEqual([openModel, secretModel].sort());
    const asReader = await gql('reader', 'POST', { query: GET_RUN, variables: { data: { runId: runA } } });
    expect(asReader.json.data.mlflowGetRun.run.modelVersions).toEqual([{ name: openModel, version: '1' }]);
    const searched = await gql('reader', 'POST', { query: `{ mlflowSearchModelVersions(input: {filter: "run_id='${runA}'"}) { modelVersions { name } } }` });
    expect(searched.json.data.mlflowSearchModelVersions.modelVersions).toEqual([{ name: openModel }]);
  });

  it('the GET form: a JSON body (what MLflow executes) and the query string', async () => {
    const withBody = await gql('reader', 'GET', { query: GET_EXPERIMENT, variables: { input: { experimentId: A } } });
    expect(withBody.status).toBe(200);
    expect(withBody.json.data.mlflowGetExperiment.experiment.experimentId).toBe(A);
    await expectRefusedBeforeMlflow(() => gql('reader', 'GET', { query: GET_EXPERIMENT, variables: { input: { experimentId: B } } }));
    await expectRefusedBeforeMlflow(() =>
      gql('reader', 'GET', new URLSearchParams({ query: GET_EXPERIMENT, variables: JSON.stringify({ input: { experimentId: B } }) })),
    );
  });

  it('an introspection query is answered', async () => {
    const res = await gql('reader', 'POST', { query: '{ __schema { queryType { name } mutationType { name } } }' });
    expect(res.json.data.__schema).toEqual({ queryType: { name: 'Query' }, mutationType: { name: 'Mutation' } });
  });
});

describe("GraphQL refuses B's resources before MLflow sees them", () => {
  it.each<[string, () => { query: string; variables?: object; operationName?: string }]>([
    ['experiment B (variables)', () => ({ query: GET_EXPERIMENT, variables: { input: { experimentId: B } } })],
    ['experiment B (inline)', () => ({ query: `{ mlflowGetExperiment(input: {experimentId: "${B}"}) { experiment { name } } }` })],
    ['run of B', () => ({ query: GET_RUN, variables: { data: { runId: runB } } })],
    ['run of B as runUuid', () => ({ query: `{ mlflowGetRun(input: {runUuid: "${runB}"}) { run { info { runId } } } }` })],
    ['metric history mixing A and B', () => ({ query: BULK, variables: { data: { runIds: [runA, runB], metricKey: 'loss' } } })],
    ['artifacts of B', () => ({ query: `{ mlflowListArtifacts(input: {runId: "${runB}"}) { files { path } } }` })],
    ['B behind an alias next to A', () => ({
      query: `{ ok: mlflowGetRun(input: {runId: "${runA}"}) { run { info { runId } } } x: mlflowGetRun(input: {runId: "${runB}"}) { run { info { runId } } } }`,
    })],
    ['B through a fragment', () => ({
      query: `query Q($r: String) { ...F } fragment F on Query { mlflowGetRun(input: {runId: $r}) { run { info { runId } } } }`,
      variables: { r: runB },
    })],
    ['B through a variable default', () => ({ query: `query($e: String = "${B}") { mlflowGetExperiment(input: {experimentId: $e}) { experiment { name } } }` })],
    ['search runs listing B', () => ({ query: `{ mlflowSearchRuns(input: {experimentIds: ["${A}", "${B}"]}) { runs { info { runId } } } }` })],
    ['search runs listing B (MLflow’s mutation)', () => ({ query: `mutation { mlflowSearchRuns(input: {experimentIds: ["${B}"]}) { runs { info { runId } } } }` })],
    ['search datasets of B', () => ({ query: `mutation { mlflowSearchDatasets(input: {experimentIds: ["${B}"]}) { datasetSummaries { name } } }` })],
    ['the operation picked by operationName', () => ({
      query: `query Fine { __typename } query Bad { mlflowGetExperiment(input: {experimentId: "${B}"}) { experiment { name } } }`,
      operationName: 'Bad',
    })],
    ['an unknown field', () => ({ query: '{ mlflowDeleteEverything { ok } }' })],
    ['the echo mutation', () => ({ query: 'mutation { testMutation(inputString: "x") { output } }' })],
  ])('%s', async (_name, doc) => {
    const res = await expectRefusedBeforeMlflow(() => gql('reader', 'POST', doc()));
    expect(res.json.message).toContain('GraphQL field');
  });

  it('a user without grants is refused A too, but may introspect', async () => {
    await expectRefusedBeforeMlflow(() => gql('nobody', 'POST', { query: GET_EXPERIMENT, variables: { input: { experimentId: A } } }));
    expect((await gql('nobody', 'POST', { query: '{ __typename }' })).json).toEqual({ data: { __typename: 'Query' }, errors: null });
  });

  it('a malformed document is a 400 from flowgate', async () => {
    const res = await gql('reader', 'POST', { query: '{ mlflowGetRun(' });
    expect(res.status).toBe(400);
    expect(res.json.error_code).toBe('INVALID_PARAMETER_VALUE');
  });

  it('the admin is not limited', async () => {
    const res = await gql(ADMIN.username, 'POST', { query: GET_EXPERIMENT, variables: { input: { experimentId: B } } });
    expect(res.json.data.mlflowGetExperiment.experiment.experimentId).toBe(B);
  });
});

describe("the policy covers MLflow's schema", () => {
  it('every top-level Query and Mutation field of the pinned MLflow is in the table, and no other', async () => {
    const res = await gql(ADMIN.username, 'POST', {
      query: '{ __schema { queryType { fields { name } } mutationType { fields { name } } } }',
    });
    const names = (t: { fields: Array<{ name: string }> }) => t.fields.map((f) => f.name).sort();
    expect(names(res.json.data.__schema.queryType)).toEqual([...KNOWN_ROOT_FIELDS.query].sort());
    expect(names(res.json.data.__schema.mutationType)).toEqual([...KNOWN_ROOT_FIELDS.mutation].sort());
  });
});
