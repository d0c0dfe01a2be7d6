import type { Browser } from 'playwright-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN, adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * MLflow (its default `--allowed-hosts`: loopback and private addresses) behind flowgate, called
 * under public host names. MLflow refuses any other Host with 403 "Invalid Host header", and any
 * state-changing call whose Origin is not loopback with 403 "Cross-origin request blocked": flowgate
 * sends it the upstream's host, the public one in X-Forwarded-Host, and no same-origin Origin.
 */
const HOSTS = ['ml.example.com', 'mlflow.mlflow.svc'] as const;

describe.each(HOSTS)('MLflow behind flowgate called as %s', (hostname) => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  let host = '';

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false' });
    host = `${hostname}:${new URL(fg.url).port}`;
  }, 180_000);
  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    if (fg) removeDir(fg.dir);
  });

  const as = (r: request.Test) => r.set('Host', host).set('Authorization', adminAuth());

  it('MLflow itself refuses that Host (what flowgate must not pass on)', async () => {
    const direct = await request(mlflow.url).get('/api/2.0/mlflow/experiments/search?max_results=1').set('Host', hostname);
    expect(direct.status).toBe(403);
    expect(direct.text).toContain('Invalid Host header');
  });

  it("serves MLflow's UI shell and its scripts", async () => {
    const shell = await as(request(fg.url).get('/'));
    expect(shell.status).toBe(200);
    expect(shell.headers['content-type']).toMatch(/text\/html/);
    const script = /src="([^"]*static-files[^"]+\.js)"/.exec(shell.text)?.[1];
    expect(script, shell.text.slice(0, 500)).toBeDefined();
    const js = await as(request(fg.url).get(`/${script!.replace(/^\.?\//, '')}`));
    expect(js.status).toBe(200);
  });

  it('answers API calls, a browser-style ajax call with its same-origin Origin, and artifact upload and download', async () => {
    const created = await as(request(fg.url).post('/api/2.0/mlflow/experiments/create')).send({ name: `public-${hostname}` });
    expect(created.status, created.text).toBe(200);
    const experimentId = created.body.experiment_id as string;

    // What MLflow's UI sends from a page under the public host: a POST to ajax-api with its Origin.
    const fromUi = await as(request(fg.url).post('/ajax-api/2.0/mlflow/runs/create'))
      .set('Origin', `https://${host}`)
      .send({ experiment_id: experimentId });
    expect(fromUi.status, fromUi.text).toBe(200);
    const runId = fromUi.body.run.info.run_id as string;

    // Another site's page still meets MLflow's CORS rule.
    const crossSite = await as(request(fg.url).post('/ajax-api/2.0/mlflow/runs/create'))
      .set('Origin', 'https://elsewhere.example')
      .send({ experiment_id: experimentId });
    expect(crossSite.status).toBe(403);

    const path = `/api/2.0/mlflow-artifacts/artifacts/${experimentId}/${runId}/artifacts/notes.txt`;
    const put = await as(request(fg.url).put(path)).set('Content-Type', 'text/plain').send('written through a public host');
    expect(put.status, put.text).toBe(200);
    const got = await as(request(fg.url).get(path)).buffer(true).parse((res, cb) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => cb(null, text));
    });
    expect(got.status).toBe(200);
    expect(got.body).toBe('written through a public host');
  });

  it('works for the MLflow Python client whose tracking URI names that host', async () => {
    // The name resolves to loopback inside this Python process only: the request still carries Host: <hostname>:<port>.
    const code = `
import socket
_resolve = socket.getaddrinfo
def _loopback(name, *args, **kwargs):
    return _resolve('127.0.0.1' if name == ${JSON.stringify(hostname)} else name, *args, **kwargs)
socket.getaddrinfo = _loopback
import os, tempfile, mlflow
mlflow.set_experiment('python-${hostname}')
with mlflow.start_run() as run:
    mlflow.log_param('host', ${JSON.stringify(hostname)})
    mlflow.log_metric('m', 1.5)
    path = os.path.join(tempfile.mkdtemp(), 'hello.txt')
    open(path, 'w').write('hello')
    mlflow.log_artifact(path)
back = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path='hello.txt')
print('RESULT', mlflow.get_run(run.info.run_id).data.params['host'], open(back).read())
`;
    const r = await runPython(mlflow.venv, code, {
      MLFLOW_TRACKING_URI: `http://${host}`,
      MLFLOW_TRACKING_USERNAME: ADMIN.username,
      MLFLOW_TRACKING_PASSWORD: ADMIN.token,
      MLFLOW_HTTP_REQUEST_MAX_RETRIES: '0',
      NO_PROXY: '*',
    });
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
    expect(r.stdout).toContain(`RESULT ${hostname} hello`);
  }, 120_000);
});

describe('MLflow UI in a browser at a public host name', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  let browser: Browser;
  let base = '';

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false' });
    base = `http://ml.example.com:${new URL(fg.url).port}`;
    // Chromium resolves the name to loopback itself: no DNS, no hosts file.
    browser = await launchBrowser(['--host-resolver-rules=MAP ml.example.com 127.0.0.1']);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await fg?.close();
    await mlflow?.stop();
    if (fg) removeDir(fg.dir);
  });

  it('signs in, lists experiments and creates one from the page', async () => {
    const seeded = await request(fg.url).post('/api/2.0/mlflow/experiments/create').set('Authorization', adminAuth()).send({ name: 'listed-in-the-ui' });
    expect(seeded.status).toBe(200);
    const page = await browser.newPage();
    const refused: string[] = [];
    page.on('response', (r) => {
      if (r.status() >= 400) refused.push(`${r.status()} ${r.request().method()} ${r.url()}`);
    });
    await page.goto(`${base}/`);
    await page.waitForURL((u) => u.pathname === '/flowgate/login');
    await page.getByLabel('User name').fill(ADMIN.username);
    await page.getByLabel('Access token').fill(ADMIN.token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => !u.pathname.startsWith('/flowgate/login'));
    // The list comes from the UI's own POST to ajax-api/…/experiments/search, sent with the page's Origin.
    await page.goto(`${base}/#/experiments`);
    await page
      .getByText('listed-in-the-ui')
      .first()
      .waitFor({ timeout: 90_000 })
      .catch(async (e: Error) => {
        throw new Error(`${e.message}\nat ${page.url()}, refused: ${refused.join('; ')}\n${(await page.content()).slice(0, 1500)}`);
      });
    expect(refused).toEqual([]);

    // The request MLflow's UI makes to create an experiment, from the page, with the browser's own Origin and session cookie.
    const answer = (await page.evaluate(async () => {
      const r = await fetch('/ajax-api/2.0/mlflow/experiments/create', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ name: 'made-in-the-browser' }),
      });
      return { status: r.status, text: await r.text() };
    })) as { status: number; text: string };
    expect(answer.status, answer.text).toBe(200);
    const found = await request(fg.url).get('/api/2.0/mlflow/experiments/get-by-name?experiment_name=made-in-the-browser').set('Authorization', adminAuth());
    expect(found.status).toBe(200);
  }, 180_000);
});
