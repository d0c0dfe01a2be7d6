import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { expectAccessible, signInToManage } from '../helpers/ui-pages.js';

/**
 * MCP servers on the Manage screens, in Debian's chromium against the real MLflow under a base path: a
 * server's name holds a `/` (`<namespace>/<slug>`), which the screens carry in one route segment and the
 * admin API as two; MLflow's search pages them; READ, EDIT and MANAGE are offered (no USE); Explain
 * shows MLflow's own calls on the server's path. A manager who is not an admin sees the servers she manages.
 */
const BASE_PATH = '/mlflow';
const MCP = '/api/3.0/mlflow/mcp-servers';

describe('MCP servers on the Manage screens', () => {
  let mlflow: MlflowServer;
  let fg: FlowgateProcess;
  let browser: Browser;
  let base = '';
  const suffix = Date.now().toString(36);
  const names = { search: `com.ui-${suffix}/search`, other: `com.ui-${suffix}/other`, team: `org.team-${suffix}/tools` };
  const { call, tokens, withTokens } = jsonCaller(() => base);

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    fg = await startFlowgateProcess({ env: { FLOWGATE_BASE_PATH: BASE_PATH, FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false' } });
    base = fg.url;
    browser = await launchBrowser();
    await withTokens(['maria', 'colin']);
    await call('POST', MCP, { name: names.other });
    // maria makes her own: its creator manages it.
    const made = await fetch(`${base}${MCP}`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from(`maria:${tokens.maria}`).toString('base64')}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: names.search }),
    });
    expect(made.status).toBe(200);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.stop();
    await mlflow?.stop();
  });

  async function signedIn(username: string, token: string): Promise<Page> {
    const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
    await signInToManage(page, base, BASE_PATH, username, token);
    return page;
  }

  async function screen(page: Page, route: string, heading: string): Promise<void> {
    await page.goto(`${base}/flowgate/ui/#/${route}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  const options = (page: Page, label: string) => page.getByLabel(label, { exact: true }).locator('option').allTextContents();
  const verdict = (page: Page) => page.locator('#fg-explain-verdict');

  async function explainFor(page: Page, action: string, username: string): Promise<void> {
    await page.locator('#fg-explain-user').fill(username);
    await page.locator('#fg-explain-action').selectOption(action);
    await page.getByRole('button', { name: 'Explain', exact: true }).click();
  }

  it(
    'an admin lists and searches MCP servers, opens one by its slashed name, grants READ by clicking, and explains read and edit',
    async () => {
      const page = await signedIn(ADMIN.username, ADMIN.token);
      await page.getByRole('navigation', { name: 'Permissions' }).getByRole('link', { name: 'MCP servers', exact: true }).waitFor();
      await screen(page, 'mcp-servers', 'MCP servers');
      const list = page.getByRole('table', { name: 'MCP servers' });
      await expect.poll(() => list.getByRole('link').allTextContents(), { timeout: 10_000 }).toEqual([names.other, names.search].sort());
      await page.getByLabel('Search MCP servers').fill('SEARCH');
      await expect.poll(() => list.getByRole('link').allTextContents(), { timeout: 10_000 }).toEqual([names.search]);
      await expectAccessible(page, 'MCP servers');

      await list.getByRole('link', { name: names.search, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: names.search }).waitFor();
      expect(await options(page, 'Permission')).toEqual(['READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS']);
      await page.getByRole('table', { name: 'Grants' }).getByRole('row', { name: /maria MANAGE/ }).waitFor();
      await page.locator('#fg-grant-name').fill('colin');
      await page.locator('#fg-grant-permission').selectOption('READ');
      await page.getByRole('button', { name: 'Grant', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByText(`Give user “colin” READ on MCP server “${names.search}”?`).waitFor();
      await dialog.getByRole('button', { name: 'Grant' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.getByRole('table', { name: 'Grants' }).getByRole('row', { name: /colin READ/ }).waitFor();
      expect(await call('GET', `/api/2.0/mlflow/permissions/users/colin/mcp-servers/${names.search}`)).toMatchObject({ permission: { name: names.search, permission: 'READ' } });
      await expectAccessible(page, 'MCP server page');

      expect(await options(page, 'Action')).toEqual(['Read (view it)', 'Edit (change it)', 'Manage (delete it, change who may use it)']);
      await explainFor(page, 'read', 'colin');
      await page.getByText(`GET ${MCP}/${names.search}`, { exact: true }).waitFor();
      await verdict(page).getByText('Allowed: colin may read this MCP server').waitFor();
      await explainFor(page, 'edit', 'colin');
      await page.getByText(`PATCH ${MCP}/${names.search}`, { exact: true }).waitFor();
      await verdict(page).getByText('Denied: colin may not edit this MCP server').waitFor();
      await page.context().close();
    },
    240_000,
  );

  it(
    'a manager who is not an admin lists the servers she manages; team setup offers a shared MCP server',
    async () => {
      const page = await signedIn('maria', tokens.maria!);
      await screen(page, 'mcp-servers', 'MCP servers');
      const list = page.getByRole('table', { name: 'MCP servers' });
      await expect.poll(() => list.getByRole('link').allTextContents(), { timeout: 10_000 }).toEqual([names.search]);
      await page.context().close();

      const admin = await signedIn(ADMIN.username, ADMIN.token);
      await screen(admin, 'team-setup', 'Team setup');
      expect(await options(admin, 'Shared resource')).toContain('MCP server');
      await admin.context().close();
    },
    120_000,
  );
});
