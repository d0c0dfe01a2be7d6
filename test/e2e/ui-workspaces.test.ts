import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceCaller } from '../helpers/admin-calls.js';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN, adminAuth, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { signInToManage } from '../helpers/ui-pages.js';

/**
 * Issue 34 in Debian's chromium: a member of one workspace, signed in, sees only their workspaces in
 * MLflow's own workspace picker (its list call), MLflow's model list in the workspace picked, and
 * flowgate's Manage screens, opened from MLflow's Permissions menu, acting in that same workspace.
 *
 * The screens fix their workspace as they load (their route's `?workspace=`, else MLflow's choice at
 * that moment: `localStorage['mlflow.activeWorkspace']`) and name it in the header and in every
 * confirmation; MLflow switching workspace later (a link carrying `?workspace=` opened in another tab
 * writes that key) is announced, never followed: a grant confirmed on ws-team's "prod" lands there,
 * not on ws-secret's "prod" of the same name.
 */
const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';

describe('workspaces in the browser, as a member', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  let browser: Browser;
  const { call, ok, send, tokens, withTokens } = workspaceCaller(() => fg.url);
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
    await withTokens(['ann', 'mallory']);
    for (const name of ['ws-a', 'ws-b', 'ws-team', 'ws-secret']) await call('POST', `${V3}/workspaces`, { name });
    await call('POST', `${V3}/permissions/workspaces/ws-a/users`, { username: 'ann', permission: 'USE' });
    expect((await as('ws-a', 'POST', `${V2}/registered-models/create`, { name: 'alpha-model' })).status).toBe(200);
    expect((await as('ws-b', 'POST', `${V2}/registered-models/create`, { name: 'beta-model' })).status).toBe(200);
    // Two models of one name, one in each workspace; mallory is a member of ws-team only.
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-team/users`, { username: 'mallory', permission: 'USE' });
    for (const ws of ['ws-team', 'ws-secret']) await ok('admin', ws, 'POST', `${V2}/registered-models/create`, { name: 'prod' });
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

  it('the Manage screens, opened from MLflow\'s menu, act in the workspace MLflow has picked and say so', async () => {
    const page = await signedIn();
    await page.goto(`${fg.url}/#/models?workspace=ws-a`);
    await page.getByText('alpha-model').first().waitFor({ timeout: 60_000 });
    const button = page.locator('#fg-menu-button');
    await button.waitFor({ timeout: 60_000 });
    await page.keyboard.press('Escape');
    await button.click();
    await page.locator('#fg-menu-panel').getByText('Manage', { exact: true }).click();
    await page.waitForURL((u) => u.pathname === '/flowgate/ui/' && u.hash === '#/experiments?workspace=ws-a');
    await expect(page.locator('#fg-workspace').textContent()).resolves.toBe('ws-a');
    // The screens' own links keep it.
    await page.getByRole('navigation', { name: 'Permissions' }).getByRole('link', { name: 'Registered models', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Registered models' }).waitFor();
    expect(new URL(page.url()).hash).toBe('#/models?workspace=ws-a');
    await page.getByText('alpha-model').first().waitFor();
    expect(await page.getByText('beta-model').count()).toBe(0);
    // Her own workspace list on the Workspaces screen (a route typed without its workspace stays in ws-a).
    await page.goto(`${fg.url}/flowgate/ui/#/workspaces`);
    await page.getByRole('heading', { level: 1, name: 'Workspaces' }).waitFor();
    await page.getByText('ws-a', { exact: true }).first().waitFor();
    expect(await page.getByText('ws-b', { exact: true }).count()).toBe(0);
    await page.waitForURL((u) => u.hash === '#/workspaces?workspace=ws-a');
    await expect(page.locator('#fg-workspace').textContent()).resolves.toBe('ws-a');
  }, 120_000);

  it("a grant on ws-team's model lands in ws-team after a link switched MLflow to ws-secret; the header, the dialog and a banner say so", async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const manage: Page = await context.newPage();
    await signInToManage(manage, fg.url, '', ADMIN.username, ADMIN.token);
    // MLflow's picker on ws-team as the administrator opens ws-team's "prod" (a fresh load).
    await manage.evaluate(`localStorage.setItem('mlflow.activeWorkspace', 'ws-team')`);
    await manage.goto('about:blank');
    await manage.goto(`${fg.url}/flowgate/ui/#/models/prod`);
    await manage.getByRole('heading', { level: 1, name: 'prod' }).waitFor();
    await manage.getByRole('table', { name: 'Grants' }).waitFor();
    // Fixed in the address as it loaded, and named in the header.
    await manage.waitForURL((u) => u.hash === '#/models/prod?workspace=ws-team');
    await expect(manage.locator('header').innerText()).resolves.toContain('ws-team');
    await expect(manage.locator('#fg-workspace').textContent()).resolves.toBe('ws-team');

    // Another tab: an MLflow link that names another workspace (MLflow writes it as its active one).
    const link = await context.newPage();
    await link.goto(`${fg.url}/#/models?workspace=ws-secret`);
    await link.waitForFunction(`localStorage.getItem('mlflow.activeWorkspace') === 'ws-secret'`, undefined, { timeout: 60_000 });
    await link.close();

    // The Manage tab says so, and offers ws-secret without going there.
    const banner = manage.locator('#fg-workspace-switched');
    await banner.waitFor();
    expect(await banner.innerText()).toContain('MLflow switched to workspace “ws-secret”');
    expect(await banner.getByRole('link').getAttribute('href')).toBe('#/models?workspace=ws-secret');
    await expect(manage.locator('#fg-workspace').textContent()).resolves.toBe('ws-team');

    // Still on ws-team's "prod": grant mallory EDIT; the confirmation names the workspace.
    await manage.locator('#fg-grant-name').fill('mallory');
    await manage.locator('#fg-grant-permission').selectOption('EDIT');
    await manage.getByRole('button', { name: 'Grant', exact: true }).click();
    const dialog = manage.getByRole('dialog');
    expect(await dialog.innerText()).toContain('Give user “mallory” EDIT on registered model “prod” in workspace “ws-team”?');
    await dialog.getByRole('button', { name: 'Grant' }).click();
    await dialog.waitFor({ state: 'detached' });
    await manage.getByRole('table', { name: 'Grants' }).getByText('mallory', { exact: true }).waitFor();

    // Where it landed: mallory edits ws-team's "prod", and not ws-secret's.
    const edit = (ws: string) => send('mallory', ws, 'PATCH', `${V2}/registered-models/update`, { name: 'prod', description: 'x' });
    const inTeam = (await edit('ws-team')).status;
    const inSecret = (await edit('ws-secret')).status;
    expect({ inTeam, inSecret }).toEqual({ inTeam: 200, inSecret: 403 });

    // A reload stays in ws-team (its address names it), whatever MLflow chose since.
    await manage.reload();
    await manage.getByRole('table', { name: 'Grants' }).getByText('mallory', { exact: true }).waitFor();
    await expect(manage.locator('#fg-workspace').textContent()).resolves.toBe('ws-team');

    // MLflow switched again (another tab): the banner's link opens the screens there, saying so.
    const other = await context.newPage();
    await other.goto(`${fg.url}/flowgate/ui/#/access-key?workspace=ws-team`);
    await other.evaluate(`localStorage.setItem('mlflow.activeWorkspace', 'ws-b')`);
    await other.close();
    await banner.getByRole('link', { name: 'Open the Manage screens in workspace “ws-b”' }).click();
    await manage.locator('#fg-workspace').filter({ hasText: /^ws-b$/ }).waitFor();
    await manage.getByRole('heading', { level: 1, name: 'Registered models' }).waitFor();
    await manage.getByText('beta-model').first().waitFor();
    expect(new URL(manage.url()).hash).toBe('#/models?workspace=ws-b');
    await context.close();
  }, 180_000);
});
