import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { RECORDED_RELEASES, routesOf, rowExistsIn } from '../../src/authz/catalog-versions.js';
import { createMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { rowsBroaderThanRoutes, rowsHitBy, unclassifiedRoutes, type MlflowRoute } from '../../src/authz/mlflow-rules.js';
import { upstreamJsonFor } from '../helpers/mlflow-connection.js';
import { createRouteMatcher } from '../../src/authz/route-matcher.js';
import { FlowgateError } from '../../src/errors.js';
import { runningMlflowVersion, runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/*
 * The catalog against the installed MLflow's own route table (FLOWGATE_MLFLOW_VERSION picks the
 * release), both ways and exactly for that release: every route it answers is classified, and the
 * catalog rows recorded for it (src/authz/catalog-versions.json) are exactly those its routes land on.
 */

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

interface DumpedRoute {
  readonly methods: string[];
  readonly rule: string;
  readonly source: 'flask' | 'fastapi' | 'mount';
}

async function dumpRoutes(venv: string): Promise<DumpedRoute[]> {
  const script = join(REPO_ROOT, 'scripts/dump-mlflow-routes.py');
  const result = await runPython(venv, `import runpy, sys; sys.argv = ['dump']; runpy.run_path(${JSON.stringify(script)}, run_name='__main__')`);
  if (result.code !== 0) throw new Error(`dump-mlflow-routes.py failed (${result.code}):\n${result.stderr}`);
  return JSON.parse(result.stdout) as DumpedRoute[];
}

const key = (r: MlflowRoute) => `${r.method} ${r.rule}`;

/** One MLflow (with a static prefix, as some deployments run it) for both groups of tests. */
let server: MlflowServer;
let version: string;
/** Where this release serves its REST API under `--static-prefix`: under the prefix (3.14 on), or at its root (3.11 and older). */
let apiPrefix = '/mlflow';

beforeAll(async () => {
  server = await startMlflowServer({ staticPrefix: '/mlflow' });
  version = await runningMlflowVersion(server);
  const probe = await fetch(`${server.url}/api/2.0/mlflow/experiments/search?max_results=1`);
  if (probe.status === 404) apiPrefix = '';
}, 900_000);

const apiUrl = () => `http://127.0.0.1:${server.port}${apiPrefix}`;

afterAll(async () => {
  await server?.stop();
});

describe('route catalog vs the installed MLflow', () => {
  let dumped: DumpedRoute[];
  let routes: MlflowRoute[];
  const matcher = createRouteMatcher(ROUTE_CATALOG);

  beforeAll(async () => {
    dumped = (await dumpRoutes(server.venv)).filter((r) => r.source !== 'mount' && !r.methods.includes('WEBSOCKET'));
    routes = dumped.flatMap((r) => r.methods.map((method) => ({ method, rule: r.rule })));
  });

  it('runs a release the catalog was recorded against', () => {
    expect(RECORDED_RELEASES, `record MLflow ${version}: node scripts/mlflow-matrix.mjs record ${version}`).toContain(version);
  });

  it('the dump sees the apps this release serves', () => {
    expect(dumped.some((r) => r.source === 'flask' && r.rule === '/api/2.0/mlflow/runs/get')).toBe(true);
    // OTLP export is a FastAPI route: its presence shows the FastAPI app was read, where there is one.
    const servesOtlp = routesOf(version)?.some((r) => r.rule === '/v1/traces') ?? true;
    expect(dumped.some((r) => r.source === 'fastapi' && r.rule === '/v1/traces')).toBe(servesOtlp);
  });

  it('answers exactly the routes recorded for its release', () => {
    const recorded = new Set((routesOf(version) ?? []).map(key));
    const live = new Set(routes.map(key));
    expect([...live].filter((r) => !recorded.has(r)), 'routes MLflow answers that the record lacks').toEqual([]);
    expect([...recorded].filter((r) => !live.has(r)), 'recorded routes MLflow does not answer').toEqual([]);
  });

  it('classifies every (method, rule) MLflow answers', () => {
    expect(unclassifiedRoutes(matcher, routes), 'routes missing from src/authz/catalog.ts').toEqual([]);
  });

  it('has a real MLflow route behind every catalog row recorded for this release, and no other', () => {
    const hit = rowsHitBy(matcher, routes);
    const phantom = ROUTE_CATALOG.filter((row) => rowExistsIn(row, version) && !hit.has(row));
    expect(phantom.map((row) => `${row.method} ${row.pattern}`), 'catalog rows with no MLflow route').toEqual([]);
    const unrecorded = ROUTE_CATALOG.filter((row) => !rowExistsIn(row, version) && hit.has(row));
    expect(unrecorded.map((row) => `${row.method} ${row.pattern}`), 'rows the record says this release lacks').toEqual([]);
  });

  it('matches each row only with paths of the same shape MLflow gives it', () => {
    // A row's own sample path must be one MLflow answers with that method, so a too-broad `:param`
    // or `*` shows up here.
    const rows = ROUTE_CATALOG.filter((row) => rowExistsIn(row, version));
    expect(rowsBroaderThanRoutes(rows, routes)).toEqual([]);
  });
});

describe('look-ups against the real MLflow REST API', () => {
  let ids: { experiment: string; run: string; loggedModel: string; trace: string; prompt: string; model: string; issue: string; labelSchema: string; dataset: string };
  // The GenAI objects looked up by their own id exist only in the releases that have their routes.
  const has = (method: 'GET', pattern: string) => rowExistsIn({ method, pattern }, version);
  const hasIssues = () => has('GET', '/api/3.0/mlflow/issues/:issue_id');
  const hasLabelSchemas = () => has('GET', '/api/3.0/mlflow/label-schemas/get');
  const hasDatasets = () => has('GET', '/api/3.0/mlflow/datasets/:dataset_id/experiment-ids');

  beforeAll(async () => {
    const created = await runPython(
      server.venv,
      `
import json, mlflow
from mlflow import MlflowClient
mlflow.set_tracking_uri(${JSON.stringify(apiUrl())})
client = MlflowClient()
exp = client.create_experiment("lookups e2e")
run = client.create_run(exp)
lm = client.create_logged_model(experiment_id=exp, name="lm")
mlflow.set_experiment(experiment_id=exp)
with mlflow.start_span("probe") as span:
    trace_id = span.trace_id
mlflow.flush_trace_async_logging() if hasattr(mlflow, "flush_trace_async_logging") else None
client.create_registered_model("plain-model")
# MLflow 3.0 has the prompt registry only at the top level; 3.1 added \`mlflow.genai\`'s.
prompts = mlflow.genai if hasattr(mlflow.genai, "register_prompt") else mlflow
prompts.register_prompt(name="my-prompt", template="Hello {{name}}")
import requests
api = ${JSON.stringify(apiUrl())} + "/api/3.0/mlflow"
issue = schema = dataset = None
if ${hasIssues() ? 'True' : 'False'}:
    issue = requests.post(api + "/issues", json={"experiment_id": exp, "name": "probe issue", "description": "e2e"}).json()["issue"]["issue_id"]
if ${hasLabelSchemas() ? 'True' : 'False'}:
    schema = requests.post(api + "/label-schemas/create", json={"experiment_id": exp, "name": "probe schema", "type": "FEEDBACK", "input": {"text": {}}}).json()["label_schema"]["schema_id"]
if ${hasDatasets() ? 'True' : 'False'}:
    from mlflow.genai.datasets import create_dataset
    dataset = create_dataset(name="probe dataset", experiment_id=[exp]).dataset_id
print(json.dumps({"experiment": exp, "run": run.info.run_id, "loggedModel": lm.model_id, "trace": trace_id, "prompt": "my-prompt", "model": "plain-model", "issue": issue, "labelSchema": schema, "dataset": dataset}))
`,
      { MLFLOW_ENABLE_ASYNC_TRACE_LOGGING: 'false' },
    );
    if (created.code !== 0) throw new Error(`seeding MLflow failed:\n${created.stderr}\n${server.logs()}`);
    ids = JSON.parse(created.stdout.trim().split('\n').pop() ?? '{}');
  });

  // As flowgate runs in front of it: MLflow's static prefix configured, the look-up path chosen by its version.
  const lookupsFor = () =>
    createMlflowLookups({
      client: upstreamJsonFor(`http://127.0.0.1:${server.port}`, '/mlflow', 10_000),
      cacheSize: 100,
      ttlMs: 1_000,
      mlflowVersion: version,
      staticPrefix: '/mlflow',
    });

  it('maps run, logged model and trace to their experiment', async () => {
    const lookups = lookupsFor();
    expect(await lookups.experimentOfRun(ids.run)).toBe(ids.experiment);
    expect(await lookups.experimentOfLoggedModel(ids.loggedModel)).toBe(ids.experiment);
    expect(await lookups.experimentOfTrace(ids.trace)).toBe(ids.experiment);
    expect(await lookups.experimentIdByName('lookups e2e')).toBe(ids.experiment);
  });

  it('maps a GenAI issue, label schema and evaluation dataset to their experiment(s)', async () => {
    const lookups = lookupsFor();
    if (hasIssues()) expect(await lookups.experimentOfOwned('issue', ids.issue)).toBe(ids.experiment);
    if (hasLabelSchemas()) expect(await lookups.experimentOfOwned('label_schema', ids.labelSchema)).toBe(ids.experiment);
    if (hasDatasets()) expect(await lookups.experimentsOfDataset(ids.dataset)).toEqual([ids.experiment]);
    // A release without them says it has no such route, which flowgate passes on as such.
    if (!hasIssues())
      await expect(lookups.experimentOfOwned('issue', 'iss-0123456789abcdef')).rejects.toMatchObject({ code: 'ENDPOINT_NOT_FOUND' });
  });

  it('tells a prompt from a registered model', async () => {
    const lookups = lookupsFor();
    expect(await lookups.isPrompt(ids.prompt)).toBe(true);
    expect(await lookups.isPrompt(ids.model)).toBe(false);
  });

  it('turns MLflow 404s into RESOURCE_DOES_NOT_EXIST', async () => {
    const lookups = lookupsFor();
    const attempts = [
      () => lookups.experimentOfRun('0123456789abcdef0123456789abcdef'),
      () => lookups.experimentOfLoggedModel('m-0123456789abcdef'),
      () => lookups.experimentOfTrace('tr-0123456789abcdef'),
      () => lookups.experimentIdByName('no such experiment'),
      () => lookups.isPrompt('no such model'),
      ...(hasIssues() ? [() => lookups.experimentOfOwned('issue', 'iss-0123456789abcdef')] : []),
      ...(hasLabelSchemas() ? [() => lookups.experimentOfOwned('label_schema', 'ls-0123456789abcdef')] : []),
    ];
    for (const attempt of attempts) {
      await expect(attempt()).rejects.toMatchObject({ code: 'RESOURCE_DOES_NOT_EXIST' });
    }
  });

  it('turns a dead upstream into TEMPORARILY_UNAVAILABLE', async () => {
    const lookups = createMlflowLookups({ client: upstreamJsonFor('http://127.0.0.1:1', '', 10_000), cacheSize: 10, ttlMs: 0 });
    const error = await lookups.experimentOfRun(ids.run).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlowgateError);
    expect((error as FlowgateError).code).toBe('TEMPORARILY_UNAVAILABLE');
  });
});
