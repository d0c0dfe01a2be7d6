import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { launchBrowser } from '../helpers/browser.js';
import { adminAuth, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { signInToManage } from '../helpers/ui-pages.js';

/**
 * Issue 34 in Debian's chromium: a member of one workspace, signed in, sees only their workspaces in
 * MLflow's own workspace picker (its list call), MLflow's model list in the workspace picked, and
 * flowgate's Manage screens acting in that same workspace (MLflow's UI keeps the choice in
 * `localStorage['mlflow.activeWorkspace']`, which the screens read).
 */
const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';

describe('workspaces in the browser, as a member', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  let browser: Browser;
  const { call, tokens, withTokens } = jsonCaller(() => fg.url);
  const as = (ws: string, method: string, path: string, body?: unknown) =>
    fetch(fg.url + path, {
      method,
      headers: { Authorization: adminAuth(), 'Content-Type': 'application/json', 'X-MLFLOW-WORKSPACE': ws },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  beforeAll(async () => {
    mlflow = await startMlflowServer({ args: ['--enable-workspaces'] });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false', FLOWGATE_DEFAULT_PERMISSION: 'READ' });
    browser = await launchBrowser();
    await withTokens(['ann']);
    for (const name of ['ws-a', 'ws-b']) await call('POST', `${V3}/workspaces`, { name });
    await call('POST', `${V3}/permissions/workspaces/ws-a/users`, { username: 'ann', permission: 'USE' });
    expect((await as('ws-a', 'POST', `${V2}/registered-models/create`, { name: 'alpha-model' })).status).toBe(200);
    expect((await as('ws-b', 'POST', `${V2}/registered-models/create`, { name: 'beta-model' })).status).toBe(200);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.close();
    await mlflow?.stop();
  });

  async function signedIn(): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
    await signInToManage(page, fg.url, '', 'ann', tokens.ann!);
    return page;
  }

  it("MLflow's picker lists only her workspaces, and MLflow's pages show the picked workspace's models", async () => {
    const page = await signedIn();
    const listed = (await page.evaluate(`fetch('/ajax-api/3.0/mlflow/workspaces').then((r) => r.json())`)) as { workspaces: Array<{ name: string }> };
    expect(listed.workspaces.map((w) => w.name).sort()).toEqual(['default', 'ws-a']);

    await page.evaluate(`localStorage.setItem('mlflow.activeWorkspace', 'ws-a')`);
    await page.goto(`${fg.url}/#/models`);
    await page.getByText('alpha-model').first().waitFor({ timeout: 60_000 });
    expect(await page.getByText('beta-model').count()).toBe(0);
  }, 120_000);

  it('the Manage screens act in the workspace MLflow has picked', async () => {
    const page = await signedIn();
    await page.evaluate(`localStorage.setItem('mlflow.activeWorkspace', 'ws-a')`);
    await page.goto(`${fg.url}/flowgate/ui/#/models`);
    await page.getByRole('heading', { level: 1, name: 'Registered models' }).waitFor();
    await page.getByText('alpha-model').first().waitFor();
    expect(await page.getByText('beta-model').count()).toBe(0);
    // Her own workspace list on the Workspaces screen.
    await page.goto(`${fg.url}/flowgate/ui/#/workspaces`);
    await page.getByRole('heading', { level: 1, name: 'Workspaces' }).waitFor();
    await page.getByText('ws-a', { exact: true }).first().waitFor();
    expect(await page.getByText('ws-b', { exact: true }).count()).toBe(0);
  }, 120_000);
});
