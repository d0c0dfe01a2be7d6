import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps, type Op, type Outcome } from '../helpers/python-ops.js';

/**
 * Issue 3, FLOWGATE_BASE_PATH: flowgate (`node dist/cli.js serve`) under `/mlflow` in front of the
 * real MLflow run (a) without a static prefix and (b) with `--static-prefix /mlflow`
 * (FLOWGATE_UPSTREAM_STATIC_PREFIX=/mlflow). The Python client, pointed at
 * `http://127.0.0.1:<port>/mlflow/`, creates an experiment and a run, logs a metric, uploads and
 * downloads an artifact; a user without a grant is denied all of it, including the artifact routes
 * under the prefix; the UI shell and its assets load under the prefix.
 *
 * MLflow 3.17.2 with `--static-prefix P` serves every Flask route (REST, ajax-api, get-artifact,
 * the UI) under P; its native FastAPI artifact router is mounted without P, so P + the artifact
 * path reaches the Flask artifact handler (which buffers an upload through the WSGI bridge). flowgate
 * forwards and looks up under P, so every call here lands on the prefixed routes.
 */
const SCENARIOS = [
  { name: 'MLflow without --static-prefix', staticPrefix: undefined },
  { name: 'MLflow with --static-prefix /mlflow', staticPrefix: '/mlflow' },
] as const;

const outcome = (o: Outcome | undefined) => (o?.ok ? 'ok' : o?.error);
const value = (o: Outcome | undefined) => {
  if (!o?.ok) throw new Error(`expected success, got ${JSON.stringify(o)}`);
  return o.value;
};

describe.each(SCENARIOS)('FLOWGATE_BASE_PATH=/mlflow, $name', ({ staticPrefix }) => {
  let mlflow: MlflowServer;
  let fg: FlowgateProcess;
  const tokens: Record<string, string> = {};
  let trackingUri = '';
  let exp = '';
  let run = '';
  const suffix = Date.now().toString(36);

  async function adminCall(method: string, path: string, body: unknown) {
    const r = await fetch(fg.url + path, {
      method,
      headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(json)}`);
    return json;
  }
  const as = (user: string, ops: Op[]) => runOps(mlflow.venv, trackingUri, user, tokens[user]!, ops);
  const auth = (user: string) => basic(user, tokens[user]!);
  const get = async (path: string, user?: string) => {
    const r = await fetch(fg.url + path, user ? { headers: { Authorization: auth(user) } } : {});
    return { status: r.status, type: r.headers.get('content-type') ?? '', text: await r.text() };
  };

  beforeAll(async () => {
    mlflow = await startMlflowServer(staticPrefix ? { staticPrefix } : {});
    fg = await startFlowgateProcess({
      env: {
        FLOWGATE_BASE_PATH: '/mlflow',
        FLOWGATE_UPSTREAM_URL: `http://127.0.0.1:${mlflow.port}`,
        ...(staticPrefix ? { FLOWGATE_UPSTREAM_STATIC_PREFIX: staticPrefix } : {}),
      },
    });
    expect(fg.url).toBe(`${fg.origin}/mlflow`);
    trackingUri = `${fg.origin}/mlflow/`;
    for (const username of ['alice', 'nobody']) {
      await adminCall('POST', '/api/2.0/mlflow/users/create', { username });
      const t = await adminCall('PATCH', '/api/2.0/mlflow/permissions/users/access-token', {
        username,
        expiration: new Date(Date.now() + 86_400_000).toISOString(),
      });
      tokens[username] = t.token as string;
    }
    // alice creates the experiment (and so manages it); nobody holds no grant at all.
    exp = value((await as('alice', [['exp', 'create_experiment', `base-path-${suffix}`]])).exp) as string;
    run = value((await as('alice', [['run', 'create_run', exp]])).run) as string;
  }, 300_000);

  afterAll(async () => {
    await fg?.stop();
    await mlflow?.stop();
  });

  it('the Python client logs a metric, uploads and downloads an artifact through the prefix', async () => {
    const results = await as('alice', [
      ['log_metric', 'log_metric', run],
      ['upload', 'log_artifact', run, 'hello.txt'],
      ['download', 'download_artifact', run, 'hello.txt'],
      ['list', 'list_artifacts', run],
      ['get_run', 'get_run', run],
    ]);
    expect(results).toEqual({
      log_metric: { ok: true, value: true },
      upload: { ok: true, value: true },
      download: { ok: true, value: 'hello from alice' },
      list: { ok: true, value: ['hello.txt'] },
      get_run: { ok: true, value: exp },
    });
    const history = await get(`/api/2.0/mlflow/metrics/get-history?run_id=${run}&metric_key=loss`, 'alice');
    expect(history.status).toBe(200);
    expect(JSON.parse(history.text)).toMatchObject({ metrics: [expect.objectContaining({ key: 'loss', value: 0.5 })] });
  }, 120_000);

  it('a user without a grant is denied the run and its artifacts (client and every artifact route)', async () => {
    const results = await as('nobody', [
      ['get_run', 'get_run', run],
      ['log_metric', 'log_metric', run],
      ['list', 'list_artifacts', run],
      ['download', 'download_artifact', run, 'hello.txt'],
      ['upload', 'log_artifact', run, 'sneaky.txt'],
    ]);
    expect(Object.fromEntries(Object.entries(results).map(([k, v]) => [k, outcome(v)]))).toEqual({
      get_run: 'PERMISSION_DENIED',
      log_metric: 'PERMISSION_DENIED',
      list: 'PERMISSION_DENIED',
      download: 'PERMISSION_DENIED',
      upload: 'PERMISSION_DENIED',
    });

    // The same artifact under the prefix, by every route that serves it: alice yes, nobody 403
    // (a 403, not a 503: flowgate's run look-ups reach MLflow under its static prefix).
    const routes = [
      `/api/2.0/mlflow-artifacts/artifacts/${exp}/${run}/artifacts/hello.txt`,
      `/ajax-api/2.0/mlflow-artifacts/artifacts/${exp}/${run}/artifacts/hello.txt`,
      `/get-artifact?path=hello.txt&run_uuid=${run}`,
      `/get-artifact?path=hello.txt&run_id=${run}`,
    ];
    for (const path of routes) {
      const mine = await get(path, 'alice');
      expect([path, mine.status, mine.text]).toEqual([path, 200, 'hello from alice']);
      const theirs = await get(path, 'nobody');
      expect([path, theirs.status, JSON.parse(theirs.text).error_code]).toEqual([path, 403, 'PERMISSION_DENIED']);
    }
    for (const path of [`/ajax-api/2.0/mlflow/runs/get?run_id=${run}`, `/api/2.0/mlflow/artifacts/list?run_id=${run}`]) {
      expect([path, (await get(path, 'alice')).status]).toEqual([path, 200]);
      expect([path, (await get(path, 'nobody')).status]).toEqual([path, 403]);
    }
    const put = await fetch(`${fg.url}/api/2.0/mlflow-artifacts/artifacts/${exp}/${run}/artifacts/put.txt`, {
      method: 'PUT',
      headers: { Authorization: auth('nobody') },
      body: 'nope',
    });
    expect(put.status).toBe(403);
  }, 120_000);

  it('serves the UI shell and its assets under the prefix; nothing outside it', async () => {
    for (const path of ['/', '']) {
      const shell = await get(path);
      expect([path, shell.status, shell.type]).toEqual([path, 200, expect.stringMatching(/^text\/html/)]);
      expect(shell.text).toMatch(/<title>MLflow<\/title>/i);
    }
    const shell = await get('/');
    const asset = /(?:src|href)="\.?\/?(static-files\/[^"]+\.js)"/.exec(shell.text)?.[1];
    expect(asset, shell.text.slice(0, 500)).toBeDefined();
    const js = await get(`/${asset}`);
    expect([js.status, js.type]).toEqual([200, expect.stringMatching(/javascript/)]);

    const outside = await fetch(`${fg.origin}/api/2.0/mlflow/experiments/get?experiment_id=${exp}`, { headers: { Authorization: auth('alice') } });
    expect(outside.status).toBe(404);
    expect(await outside.json()).toMatchObject({ error_code: 'ENDPOINT_NOT_FOUND' });
    expect((await fetch(`${fg.origin}/mlflow/healthz`)).status).toBe(200);
    expect((await fetch(`${fg.origin}/mlflow/readyz`)).status).toBe(200);
  });
});
