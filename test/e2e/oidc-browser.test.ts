import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { adminAuth, removeDir } from '../helpers/flowgate.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { flowgateClientAt, freePort, startOidcFlowgate, startOidcProvider, type OidcFlowgate, type TestProvider } from '../helpers/oidc-provider.js';

/**
 * The whole story in a real browser: sign in at the identity provider, land on the real MLflow UI
 * through flowgate, see only what your groups allow, create an access key and use it with the
 * MLflow Python client, sign out.
 */
let mlflow: MlflowServer;
let idp: TestProvider;
let fg: OidcFlowgate;
let browser: Browser;
let base: string;

async function api(path: string, body: unknown): Promise<Response> {
  return fetch(base + path, {
    method: 'POST',
    headers: { authorization: adminAuth(), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

beforeAll(async () => {
  mlflow = await startMlflowServer();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({
    ...flowgateClientAt(base),
    accounts: [
      { username: 'ada', name: 'Ada Admin', roles: ['mlflow-admin'] },
      { username: 'tom', name: 'Tom Teammate', roles: ['team-a'] },
    ],
  });
  fg = await startOidcFlowgate(
    { FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_OIDC_ISSUER_URL: idp.issuer, FLOWGATE_OIDC_ADMIN_ROLE: 'mlflow-admin' },
    port,
  );
  browser = await launchBrowser();
  for (const name of ['team-a-experiment', 'secret-experiment']) expect((await api('/api/2.0/mlflow/experiments/create', { name })).status).toBe(200);
  expect((await api('/api/2.0/mlflow/permissions/groups', { group_name: 'team-a' })).status).toBeLessThan(300);
  const search = await fetch(`${base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=team-a-experiment`, {
    headers: { authorization: adminAuth() },
  });
  const id = ((await search.json()) as { experiment: { experiment_id: string } }).experiment.experiment_id;
  expect((await api(`/api/2.0/mlflow/permissions/groups/team-a/experiments/${id}`, { permission: 'READ' })).status).toBeLessThan(300);
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await fg?.close();
  await idp?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

async function signIn(page: import('playwright-core').Page, login: string): Promise<void> {
  await page.goto(`${base}/#/experiments`);
  await page.waitForURL((u) => u.href.startsWith(idp.issuer));
  await page.fill('input[name="login"]', login);
  await page.fill('input[name="password"]', 'any password');
  await page.click('button[type="submit"]');
  await page.waitForURL((u) => u.href.startsWith(base) && !u.pathname.startsWith('/flowgate/'));
}

// MLflow's UI is a large bundle that the browser loads and renders after sign-in: ~5 s here when the
// machine is quiet, past 30 s in one CI run with the rest of the suite and heavy CPU steal. The waits
// end as soon as the list shows, so a generous bound costs nothing when it does.
const UI_LOAD_MS = 90_000;
const UI_TEST_MS = 180_000;

describe('signing in to the MLflow UI', () => {
  it('an admin-role user lands on the MLflow UI and sees every experiment', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, 'ada');
    expect(new URL(page.url()).pathname).toBe('/');
    await expect.poll(() => page.getByText('secret-experiment').count(), { timeout: UI_LOAD_MS }).toBeGreaterThan(0);
    await expect.poll(() => page.getByText('team-a-experiment').count(), { timeout: UI_LOAD_MS }).toBeGreaterThan(0);
    await context.close();
  }, UI_TEST_MS);

  it('a team member sees only the experiments their group is granted, creates an access key, uses it, and signs out', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await signIn(page, 'tom');
    await expect.poll(() => page.getByText('team-a-experiment').count(), { timeout: UI_LOAD_MS }).toBeGreaterThan(0);
    expect(await page.getByText('secret-experiment').count()).toBe(0);

    // Create access key: the button calls the access-token API with the session cookie.
    await page.goto(`${base}/flowgate/access-key`);
    await page.click('#create');
    await page.waitForSelector('#result:not([hidden])');
    const token = (await page.textContent('#token'))?.trim() ?? '';
    expect(token).toMatch(/^fgt_/);

    const py = await runPython(
      mlflow.venv,
      'import mlflow\nprint(sorted(e.name for e in mlflow.search_experiments()))',
      { MLFLOW_TRACKING_URI: base, MLFLOW_TRACKING_USERNAME: 'tom', MLFLOW_TRACKING_PASSWORD: token },
    );
    expect(py.code, py.stderr).toBe(0);
    expect(py.stdout).toContain('team-a-experiment');
    expect(py.stdout).not.toContain('secret-experiment');

    // Sign out: flowgate's page asks (a GET ends nothing), its form ends the session, the provider asks to confirm, then flowgate's page.
    await page.goto(`${base}/flowgate/logout`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await page.click('button[name="logout"][value="yes"]');
    await page.waitForURL(`${base}/flowgate/logged-out`);
    expect(await page.textContent('h1')).toContain('You are signed out');
    expect((await context.cookies()).find((c) => c.name === 'flowgate_session')).toBeUndefined();

    // Signed out for real: the UI sends the browser to the provider's login form again.
    await page.goto(`${base}/`);
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    expect(await page.locator('input[name="login"]').count()).toBe(1);
    await context.close();
  }, UI_TEST_MS);
});
