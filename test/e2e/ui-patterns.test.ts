import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN } from '../helpers/flowgate.js';
import { expectAccessible, signInToManage, startUiStack, type UiStack } from '../helpers/ui-pages.js';

/**
 * The Pattern grants screen, in Debian's chromium against the real MLflow under a base path: an admin
 * grants a group READ on every experiment named `team-…/*` by clicking, a member of the group then
 * reads a matching experiment (and not another) through the API; a pattern without a wildcard is
 * refused with the server's message; the admin removes the grant by clicking and the member is
 * refused again. A non-admin is offered no such screen. axe-core on the screen.
 */
const BASE_PATH = '/mlflow';

describe('the Pattern grants screen', () => {
  let stack: UiStack;
  let base = '';
  const suffix = Date.now().toString(36);
  const group = `pattern-readers-${suffix}`;
  const pattern = `team-${suffix}/*`;
  const ids = { matching: '', other: '' };

  const { call, basicOf, tokens, withTokens } = jsonCaller(() => base);

  beforeAll(async () => {
    stack = await startUiStack(BASE_PATH);
    base = stack.url;
    await withTokens(['pia']);
    await call('POST', '/api/2.0/mlflow/permissions/groups', { group_name: group });
    await call('POST', `/api/2.0/mlflow/permissions/groups/${group}/users`, { username: 'pia' });
    ids.matching = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: `team-${suffix}/alpha` })).experiment_id as string;
    ids.other = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: `elsewhere-${suffix}` })).experiment_id as string;
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
  });

  /** What pia's own client gets asking MLflow for an experiment through flowgate. */
  const piaReads = async (id: string) =>
    (await fetch(`${base}/api/2.0/mlflow/experiments/get?experiment_id=${id}`, { headers: { Authorization: basicOf('pia') } })).status;

  async function openPatterns(username: string, token: string): Promise<Page> {
    const page = await (await stack.browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
    await signInToManage(page, base, BASE_PATH, username, token);
    return page;
  }

  async function fillGrant(page: Page, name: string, namePattern: string): Promise<void> {
    await page.getByLabel('Grant to', { exact: true }).selectOption('groups');
    await page.getByLabel('Name', { exact: true }).fill(name);
    await page.getByLabel('Kind', { exact: true }).selectOption('experiment');
    await page.getByLabel('Pattern', { exact: true }).fill(namePattern);
    await page.getByLabel('Permission', { exact: true }).selectOption('READ');
    await page.getByRole('button', { name: 'Add pattern grant' }).click();
  }

  const table = (page: Page) => page.getByRole('table', { name: 'Pattern grants' });
  const dialog = (page: Page) => page.getByRole('dialog');

  it(
    'an admin adds a group pattern grant a member then reads through, and removes it again',
    async () => {
      expect(await piaReads(ids.matching)).toBe(403);
      const page = await openPatterns(ADMIN.username, ADMIN.token);
      await page.getByRole('navigation', { name: 'Permissions' }).getByRole('link', { name: 'Pattern grants' }).click();
      await page.getByRole('heading', { level: 1, name: 'Pattern grants' }).waitFor();
      await table(page).getByText('No pattern grants on experiments.').waitFor();

      await fillGrant(page, group, pattern);
      await dialog(page).getByText(`Give group “${group}” READ on every experiment whose name matches “${pattern}”?`).waitFor();
      await dialog(page).getByRole('button', { name: 'Grant' }).click();
      const row = table(page).getByRole('row').filter({ hasText: `Group ${group}` });
      await row.waitFor();
      await expect(row.locator('td').allTextContents()).resolves.toEqual([`Group ${group}`, pattern, 'READ', 'Remove']);
      await expectAccessible(page, 'pattern grants');

      expect(await piaReads(ids.matching)).toBe(200);
      expect(await piaReads(ids.other)).toBe(403);

      // The server refuses a name without a wildcard; its message shows in the dialog, nothing is added.
      await fillGrant(page, group, `team-${suffix}/alpha`);
      await dialog(page).getByRole('button', { name: 'Grant' }).click();
      await dialog(page).getByRole('alert').getByText(`pattern 'team-${suffix}/alpha' has no wildcard`, { exact: false }).waitFor();
      await expectAccessible(page, 'pattern grants: refused');
      await dialog(page).getByRole('button', { name: 'Cancel' }).click();
      await expect(table(page).getByRole('row').count()).resolves.toBe(2);

      await row.getByRole('button', { name: `Remove ${pattern} of ${group}` }).click();
      await dialog(page).getByText(`Remove the READ grant of group “${group}” on every experiment matching “${pattern}”?`).waitFor();
      await dialog(page).getByRole('button', { name: 'Remove' }).click();
      await table(page).getByText('No pattern grants on experiments.').waitFor();
      expect(await call('GET', '/api/2.0/mlflow/permissions/patterns')).toEqual({ patterns: [] });
      expect(await piaReads(ids.matching)).toBe(403);
      await page.context().close();
    },
    180_000,
  );

  it(
    'a non-admin is offered no Pattern grants screen, and the API refuses them the list',
    async () => {
      const page = await openPatterns('pia', tokens.pia!);
      const nav = page.getByRole('navigation', { name: 'Permissions' });
      await nav.getByRole('link', { name: 'My access key' }).waitFor();
      expect(await nav.getByRole('link', { name: 'Pattern grants' }).count()).toBe(0);
      await page.goto(`${base}/flowgate/ui/#/patterns`);
      await page.getByRole('alert').getByText('This screen is for administrators.').waitFor();
      const status = await page.evaluate(async (b) => (await fetch(`${b}/ajax-api/2.0/mlflow/permissions/patterns`)).status, base);
      expect(status).toBe(403);
      await page.context().close();
    },
    120_000,
  );
});
