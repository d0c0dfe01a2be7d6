import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { createMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { upstreamJsonFor } from '../helpers/mlflow-connection.js';
import { createRouteMatcher } from '../../src/authz/route-matcher.js';
import { FlowgateError } from '../../src/errors.js';
import { mlflowVenv, runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/*
 * The catalog against the installed MLflow's own route table, both ways: every route MLflow
 * answers must be classified, and every catalog row must be a route MLflow answers.
 */

const REPO_ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');

interface DumpedRoute {
  readonly methods: string[];
  readonly rule: string;
  readonly source: 'flask' | 'fastapi' | 'mount';
}

/** Catalog rows with no MLflow route behind them, and why. Empty: every row is real. */
const DOCUMENTED_EXTRA_ROWS: ReadonlyMap<string, string> = new Map();

const SAMPLE_SEGMENT = 'sample-1';
const SAMPLE_PATH = '1/run-1/artifacts/dir/a b%.txt';

/** A concrete path for a Flask (`<x>`, `<path:x>`) or FastAPI (`{x}`, `{x:path}`) rule. */
function sampleForRule(rule: string): string {
  return rule
    .replace(/<path:[^>]+>|\{[^}:]+:path\}/g, SAMPLE_PATH)
    .replace(/<(?:[a-z]+:)?[^>]+>|\{[^}]+\}/g, SAMPLE_SEGMENT);
}

function regexForRule(rule: string): RegExp {
  const parts = rule.split(/(<path:[^>]+>|\{[^}:]+:path\}|<[^>]+>|\{[^}]+\})/);
  const body = parts
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return /^<path:|:path\}$/.test(part) ? '.+' : '[^/]+';
    })
    .join('');
  return new RegExp(`^${body}$`);
}

/** A concrete path for a find-my-way pattern. */
function sampleForPattern(pattern: string): string {
  return pattern.replace(/:[A-Za-z_]+/g, SAMPLE_SEGMENT).replace(/\*$/, SAMPLE_PATH);
}

async function dumpRoutes(): Promise<DumpedRoute[]> {
  const venv = await mlflowVenv();
  const script = join(REPO_ROOT, 'scripts/dump-mlflow-routes.py');
  const result = await runPython(venv, `import runpy, sys; sys.argv = ['dump']; runpy.run_path(${JSON.stringify(script)}, run_name='__main__')`);
  if (result.code !== 0) throw new Error(`dump-mlflow-routes.py failed (${result.code}):\n${result.stderr}`);
  return JSON.parse(result.stdout) as DumpedRoute[];
}

describe('route catalog vs the installed MLflow', () => {
  let routes: DumpedRoute[];
  const matcher = createRouteMatcher(ROUTE_CATALOG);

  beforeAll(async () => {
    routes = (await dumpRoutes()).filter((r) => r.source !== 'mount' && !r.methods.includes('WEBSOCKET'));
  });

  it('the dump sees both apps', () => {
    expect(routes.some((r) => r.source === 'fastapi' && r.rule === '/v1/traces')).toBe(true);
    expect(routes.some((r) => r.source === 'flask' && r.rule === '/api/2.0/mlflow/runs/get')).toBe(true);
    expect(routes.length).toBeGreaterThan(400);
  });

  it('classifies every (method, rule) MLflow answers', () => {
    const unclassified: string[] = [];
    for (const route of routes) {
      for (const method of route.methods) {
        const sample = sampleForRule(route.rule);
        if (!matcher.match(method, sample)) unclassified.push(`${method} ${route.rule} (${route.source})`);
        // HEAD is answered for every Flask GET; it must be judged as that GET.
        if (method === 'GET' && matcher.match('HEAD', sample)?.entry !== matcher.match('GET', sample)?.entry) {
          unclassified.push(`HEAD ${route.rule}`);
        }
      }
    }
    expect(unclassified, 'routes missing from src/authz/catalog.ts').toEqual([]);
  });

  it('has a real MLflow route behind every catalog row', () => {
    // A row is real when some route MLflow answers lands on it (wildcard rows cover a family).
    const hit = new Set<unknown>();
    for (const route of routes) {
      for (const method of route.methods) hit.add(matcher.match(method, sampleForRule(route.rule))?.entry);
    }
    const phantom = ROUTE_CATALOG.filter((row) => !hit.has(row) && !DOCUMENTED_EXTRA_ROWS.has(`${row.method} ${row.pattern}`));
    expect(phantom.map((row) => `${row.method} ${row.pattern}`), 'catalog rows with no MLflow route').toEqual([]);
  });

  it('matches each row only with paths of the same shape MLflow gives it', () => {
    // The reverse of the above for parameters: a row's own sample path must be one MLflow answers
    // with that method, so a too-broad `:param` or `*` shows up here.
    const compiled = routes.map((r) => ({ methods: new Set(r.methods), regex: regexForRule(r.rule) }));
    const tooBroad = ROUTE_CATALOG.filter((row) => !row.pattern.endsWith('*'))
      .filter((row) => !compiled.some((r) => r.methods.has(row.method) && r.regex.test(sampleForPattern(row.pattern))))
      .map((row) => `${row.method} ${row.pattern}`);
    expect(tooBroad).toEqual([]);
  });
});

describe('look-ups against the real MLflow REST API', () => {
  let server: MlflowServer;
  let ids: { experiment: string; run: string; loggedModel: string; trace: string; prompt: string; model: string; issue: string; labelSchema: string; dataset: string };

  beforeAll(async () => {
    server = await startMlflowServer({ staticPrefix: '/mlflow' });
    const created = await runPython(
      server.venv,
      `
import json, mlflow
from mlflow import MlflowClient
mlflow.set_tracking_uri(${JSON.stringify(server.url)})
client = MlflowClient()
exp = client.create_experiment("lookups e2e")
run = client.create_run(exp)
lm = client.create_logged_model(experiment_id=exp, name="lm")
mlflow.set_experiment(experiment_id=exp)
with mlflow.start_span("probe") as span:
    trace_id = span.trace_id
mlflow.flush_trace_async_logging() if hasattr(mlflow, "flush_trace_async_logging") else None
client.create_registered_model("plain-model")
try:
    mlflow.genai.register_prompt(name="my-prompt", template="Hello {{name}}")
except Exception:
    client.create_registered_model("my-prompt", tags={"mlflow.prompt.is_prompt": "true"})
import requests
api = ${JSON.stringify(server.url)} + "/api/3.0/mlflow"
issue = requests.post(api + "/issues", json={"experiment_id": exp, "name": "probe issue", "description": "e2e"}).json()["issue"]["issue_id"]
schema = requests.post(api + "/label-schemas/create", json={"experiment_id": exp, "name": "probe schema", "type": "FEEDBACK", "input": {"text": {}}}).json()["label_schema"]["schema_id"]
from mlflow.genai.datasets import create_dataset
dataset = create_dataset(name="probe dataset", experiment_id=[exp]).dataset_id
print(json.dumps({"experiment": exp, "run": run.info.run_id, "loggedModel": lm.model_id, "trace": trace_id, "prompt": "my-prompt", "model": "plain-model", "issue": issue, "labelSchema": schema, "dataset": dataset}))
`,
      { MLFLOW_ENABLE_ASYNC_TRACE_LOGGING: 'false' },
    );
    if (created.code !== 0) throw new Error(`seeding MLflow failed:\n${created.stderr}\n${server.logs()}`);
    ids = JSON.parse(created.stdout.trim().split('\n').pop() ?? '{}');
  });

  afterAll(async () => {
    await server?.stop();
  });

  const lookupsFor = () =>
    createMlflowLookups({ client: upstreamJsonFor(`http://127.0.0.1:${server.port}`, '/mlflow', 10_000), cacheSize: 100, ttlMs: 1_000 });

  it('maps run, logged model and trace to their experiment', async () => {
    const lookups = lookupsFor();
    expect(await lookups.experimentOfRun(ids.run)).toBe(ids.experiment);
    expect(await lookups.experimentOfLoggedModel(ids.loggedModel)).toBe(ids.experiment);
    expect(await lookups.experimentOfTrace(ids.trace)).toBe(ids.experiment);
    expect(await lookups.experimentIdByName('lookups e2e')).toBe(ids.experiment);
  });

  it('maps a GenAI issue, label schema and evaluation dataset to their experiment(s)', async () => {
    const lookups = lookupsFor();
    expect(await lookups.experimentOfOwned('issue', ids.issue)).toBe(ids.experiment);
    expect(await lookups.experimentOfOwned('label_schema', ids.labelSchema)).toBe(ids.experiment);
    expect(await lookups.experimentsOfDataset(ids.dataset)).toEqual([ids.experiment]);
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
      () => lookups.experimentOfOwned('issue', 'iss-0123456789abcdef'),
      () => lookups.experimentOfOwned('label_schema', 'ls-0123456789abcdef'),
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
