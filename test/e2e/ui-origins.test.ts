import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN, adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { expectAccessible, signInToManage } from '../helpers/ui-pages.js';

/**
 * The Users and Service accounts screens, in Debian's chromium against the real MLflow, say where
 * each principal comes from (a user made by an administrator, one pushed by SCIM, a Kubernetes
 * service account) and which users are disabled; an administrator disables and enables a user from
 * their page, and the user's token stops and stays stopped.
 */
const SCIM_TOKEN = 'scim-ui-token-0123456789abcdef0123456789';

let mlflow: MlflowServer;
let fg: TestFlowgate;
let browser: Browser;
let dir = '';

const call = async (method: string, path: string, body?: unknown, auth: Record<string, string> = { Authorization: adminAuth() }) => {
  const r = await fetch(fg.url + path, { method, headers: { ...auth, 'Content-Type': 'application/json' }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${text}`);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
};

beforeAll(async () => {
  mlflow = await startMlflowServer();
  dir = mkdtempSync(join(tmpdir(), 'flowgate-ui-origins-'));
  writeFileSync(join(dir, 'scim-token'), SCIM_TOKEN);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false', FLOWGATE_SCIM_TOKEN_FILE: join(dir, 'scim-token') }, dir);
  browser = await launchBrowser();
  await call('POST', '/api/2.0/mlflow/users/create', { username: 'origin-local' });
  await call('POST', '/scim/v2/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'origin-scim', displayName: 'Pushed by SCIM' }, { Authorization: `Bearer ${SCIM_TOKEN}` });
  const off = (await call('POST', '/scim/v2/Users', { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'origin-off', active: false }, { Authorization: `Bearer ${SCIM_TOKEN}` })) as { active: boolean };
  expect(off.active).toBe(false);
  // A Kubernetes service account as bearer provisioning records it (its first call is test/security/bearer.test.ts's business).
  await call('POST', '/api/2.0/mlflow/users/create', { username: 'k8s.team-a.runner', is_service_account: true });
  await fg.store.sql.run("UPDATE users SET origin = 'kubernetes' WHERE username = 'k8s.team-a.runner'");
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await fg?.close();
  if (dir) removeDir(dir);
  await mlflow?.stop();
});

async function signedIn(): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  await signInToManage(page, fg.url, '', ADMIN.username, ADMIN.token);
  return page;
}
async function go(page: Page, route: string, heading: string): Promise<void> {
  await page.evaluate(`location.hash = ${JSON.stringify(`#/${route}`)}`);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}
const originOf = async (page: Page, table: string, name: string) =>
  (await page.getByRole('table', { name: table }).getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) }).innerText()).replace(/\s+/g, ' ');

describe('origins on the Manage screens', () => {
  it('the Users screen shows each user’s origin and marks the disabled one; Service accounts shows Kubernetes', async () => {
    const page = await signedIn();
    await go(page, 'users', 'Users');
    await page.getByRole('link', { name: 'origin-scim', exact: true }).waitFor();
    expect(await originOf(page, 'Users', 'origin-local')).toContain('Local');
    expect(await originOf(page, 'Users', 'origin-scim')).toContain('SCIM');
    expect(await originOf(page, 'Users', 'origin-scim')).not.toContain('disabled');
    expect(await originOf(page, 'Users', 'origin-off')).toMatch(/SCIM\s*disabled/);
    expect(await originOf(page, 'Users', ADMIN.username)).toContain('Local');
    await expectAccessible(page, 'users with origins');
    await go(page, 'service-accounts', 'Service accounts');
    await page.getByRole('link', { name: 'k8s.team-a.runner', exact: true }).waitFor();
    expect(await originOf(page, 'Service accounts', 'k8s.team-a.runner')).toContain('Kubernetes');
  });

  it('an administrator disables a user from their page (their token stops) and enables them again', async () => {
    await call('POST', '/api/2.0/mlflow/users/create', { username: 'origin-switch' });
    const token = (await call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: 'origin-switch' })).token as string;
    const asUser = { Authorization: `Basic ${Buffer.from(`origin-switch:${token}`).toString('base64')}` };
    const me = () => fetch(`${fg.url}/api/2.0/mlflow/permissions/users/current`, { headers: asUser }).then((r) => r.status);
    expect(await me()).toBe(200);
    const page = await signedIn();
    await go(page, 'users/origin-switch', 'origin-switch');
    await page.getByText('origin: Local').waitFor();
    await page.getByRole('button', { name: 'Disable', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Disable', exact: true }).click();
    await page.getByText('· disabled').waitFor();
    expect(await me()).toBe(401);
    await page.getByRole('button', { name: 'Enable', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Enable', exact: true }).click();
    await page.getByRole('button', { name: 'Disable', exact: true }).waitFor();
    // Disabling revoked the token: enabling gives it no life back.
    expect(await me()).toBe(401);
  });
});
