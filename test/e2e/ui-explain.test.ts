import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../helpers/flowgate.js';
import { jsonCaller } from '../helpers/admin-calls.js';
import { expectAccessible, signInToManage, startUiStack, type UiStack } from '../helpers/ui-pages.js';

/**
 * Issue 27's "Explain access" panel on the Manage screens, in Debian's chromium against the real
 * MLflow under a base path: on an experiment, a registered model and a prompt an admin explains a
 * user holding a grant through a group, one holding a direct grant, and one holding none (the default
 * decides); an unknown user's refusal shows as the screen's error; a non-admin manager can explain
 * only themself. axe-core on the answers. With FLOWGATE_UI_SCREENSHOTS=1 it also writes docs/ui/explain.png.
 */
const BASE_PATH = '/mlflow';
const SCREENSHOTS = process.env.FLOWGATE_UI_SCREENSHOTS === '1';

describe('Explain access on the Manage screens', () => {
  let stack: UiStack;
  let browser: Browser;
  let base = '';
  const suffix = Date.now().toString(36);
  const names = { exp: `explain-exp-${suffix}`, model: `explain-model-${suffix}`, prompt: `explain-prompt-${suffix}`, group: `readers-${suffix}` };
  let expId = '';

  const { call, basicOf, tokens, withTokens } = jsonCaller(() => base);

  beforeAll(async () => {
    stack = await startUiStack(BASE_PATH);
    ({ browser, url: base } = stack);
    await withTokens(['maria', 'colin', 'dora']);
    // maria creates the experiment and so holds MANAGE on it directly; colin reads it through a group;
    // dora holds nothing (the default is NO_PERMISSIONS). On the model colin holds EDIT directly.
    expId = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: names.exp }, basicOf('maria'))).experiment_id as string;
    await call('POST', '/api/2.0/mlflow/permissions/groups', { group_name: names.group });
    await call('POST', `/api/2.0/mlflow/permissions/groups/${names.group}/users`, { username: 'colin' });
    await call('POST', `/api/2.0/mlflow/permissions/groups/${names.group}/experiments/${expId}`, { permission: 'READ' });
    await call('POST', '/api/2.0/mlflow/registered-models/create', { name: names.model });
    await call('POST', `/api/2.0/mlflow/permissions/users/colin/registered-models/${names.model}`, { permission: 'EDIT' });
    await call('POST', '/api/2.0/mlflow/registered-models/create', { name: names.prompt, tags: [{ key: 'mlflow.prompt.is_prompt', value: 'true' }] });
    await call('POST', `/api/2.0/mlflow/permissions/groups/${names.group}/prompts/${names.prompt}`, { permission: 'NO_PERMISSIONS' });
    await call('POST', `/api/2.0/mlflow/permissions/users/colin/prompts/${names.prompt}`, { permission: 'READ' });
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
  });

  /** Signs in on the Manage screens themselves (not MLflow's heavy page) and opens a resource's page. */
  async function openResource(username: string, token: string, route: string, heading: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await signInToManage(page, base, BASE_PATH, username, token);
    await page.goto(`${base}/flowgate/ui/#/${route}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
    await page.getByRole('heading', { level: 2, name: 'Explain access' }).waitFor();
    return page;
  }

  async function explainFor(page: Page, action: 'read' | 'edit' | 'manage', username?: string): Promise<void> {
    if (username !== undefined) await page.locator('#fg-explain-user').fill(username);
    await page.locator('#fg-explain-action').selectOption(action);
    await page.getByRole('button', { name: 'Explain', exact: true }).click();
  }

  const verdict = (page: Page) => page.locator('#fg-explain-verdict');
  const considered = (page: Page) => page.getByRole('table', { name: 'Permissions considered' });
  /** The rows marked as deciding, by their first cell. */
  const decidingRows = async (page: Page) =>
    considered(page)
      .getByRole('row')
      .filter({ hasText: 'Deciding' })
      .locator('td:first-child')
      .allTextContents();


  it(
    'an admin explains a group grant, a direct grant and no grant at all, and sees an unknown user refused',
    async () => {
      const page = await openResource(ADMIN.username, ADMIN.token, `experiments/${expId}`, names.exp);

      // Suggestions come from the user directory as the admin types.
      await page.locator('#fg-explain-user').fill('col');
      await page.locator('#fg-explain-users option[value="colin"]').waitFor({ state: 'attached' });

      await explainFor(page, 'read', 'colin');
      await expect(verdict(page).textContent()).resolves.toBe(`Allowed: colin may read this experiment`);
      await expect(page.locator('#fg-explain-rule').textContent()).resolves.toContain(`colin’s groups (${names.group}: READ) permits read`);
      await expect(decidingRows(page)).resolves.toEqual([`Group ${names.group}`]);
      await expectAccessible(page, 'explain: group grant');
      if (SCREENSHOTS) await page.locator('#fg-explain').screenshot({ path: 'docs/ui/explain.png' });

      // Read through the group does not reach edit; the same group row decides.
      await explainFor(page, 'edit', 'colin');
      await verdict(page).getByText('Denied: colin may not edit this experiment').waitFor();
      await expect(decidingRows(page)).resolves.toEqual([`Group ${names.group}`]);

      await explainFor(page, 'manage', 'maria');
      await verdict(page).getByText('Allowed: maria may manage this experiment').waitFor();
      await expect(page.locator('#fg-explain-rule').textContent()).resolves.toContain('maria’s direct grant MANAGE on this experiment permits manage');
      await expect(decidingRows(page)).resolves.toEqual(['Direct grant to maria']);

      await explainFor(page, 'read', 'dora');
      await verdict(page).getByText('Denied: dora may not read this experiment').waitFor();
      await expect(page.locator('#fg-explain-rule').textContent()).resolves.toContain('the default permission NO_PERMISSIONS does not permit read');
      await expect(decidingRows(page)).resolves.toEqual(['Default permission']);
      await expectAccessible(page, 'explain: default');

      // The API's MLflow-shaped refusal shows as the screen's error message.
      await explainFor(page, 'read', `nobody-${suffix}`);
      await page.getByRole('alert').getByText(`User 'nobody-${suffix}' does not exist`).waitFor();
      expect(await verdict(page).count()).toBe(0);

      // On a registered model the edit call is MLflow's PATCH registered-models/update.
      await page.goto(`${base}/flowgate/ui/#/models/${names.model}`);
      await page.getByRole('heading', { level: 1, name: names.model }).waitFor();
      await explainFor(page, 'edit', 'colin');
      await verdict(page).getByText('Allowed: colin may edit this registered model').waitFor();
      await page.getByText('PATCH /api/2.0/mlflow/registered-models/update').waitFor();
      await expect(decidingRows(page)).resolves.toEqual(['Direct grant to colin']);
      await explainFor(page, 'manage', 'colin');
      await verdict(page).getByText('Denied: colin may not manage this registered model').waitFor();

      // A prompt is decided by its prompt grants: colin's direct READ wins over his group's NO_PERMISSIONS.
      await page.goto(`${base}/flowgate/ui/#/prompts/${names.prompt}`);
      await page.getByRole('heading', { level: 1, name: names.prompt }).waitFor();
      await explainFor(page, 'read', 'colin');
      await verdict(page).getByText('Allowed: colin may read this prompt').waitFor();
      await considered(page).getByText(`Grants considered on prompt “${names.prompt}”`).waitFor();
      await expect(decidingRows(page)).resolves.toEqual(['Direct grant to colin']);
      await expect(considered(page).getByRole('row', { name: `Group ${names.group} NO_PERMISSIONS` }).count()).resolves.toBe(1);
      await page.context().close();
    },
    180_000,
  );

  it(
    'a manager who is not an admin explains only themself',
    async () => {
      const page = await openResource('maria', tokens.maria!, `experiments/${expId}`, names.exp);
      const field = page.locator('#fg-explain-user');
      await expect(field.inputValue()).resolves.toBe('maria');
      expect(await field.getAttribute('readonly')).not.toBeNull();
      expect(await field.getAttribute('list')).toBeNull();

      await explainFor(page, 'manage');
      await verdict(page).getByText('Allowed: maria may manage this experiment').waitFor();
      await expect(decidingRows(page)).resolves.toEqual(['Direct grant to maria']);
      await expectAccessible(page, 'explain as manager');

      // What the panel does not offer, the API refuses too.
      const status = await page.evaluate(
        async ([b, id]) =>
          (await fetch(`${b}/ajax-api/2.0/mlflow/permissions/explain?username=colin&method=GET&path=${encodeURIComponent(`/api/2.0/mlflow/experiments/get?experiment_id=${id}`)}`)).status,
        [base, expId] as const,
      );
      expect(status).toBe(403);
      await page.context().close();
    },
    120_000,
  );

  it(
    "a manager's Check of a user holding no grant here answers as a manager's (grants here only), also while the Effective permissions list is still loading",
    async () => {
      const page = await openResource('maria', tokens.maria!, `experiments/${expId}`, names.exp);
      // The list is held (and with it what the screen knew of its scope); the check's own call is not.
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      let listed = 0;
      await page.route(
        (u) => u.pathname.endsWith('/effective') && !u.searchParams.has('username'),
        async (route) => {
          listed += 1;
          await held;
          await route.continue();
        },
      );
      await page.getByLabel('Search users').fill('d');
      await expect.poll(() => listed).toBeGreaterThan(0);
      await page.locator('#fg-check-user').fill('dora');
      await page.getByRole('button', { name: 'Check', exact: true }).click();
      await page.locator('#fg-check-result').getByText('“dora” holds no grant of their own here.').waitFor();
      release();
      await page.getByLabel('Search users').fill('');
      await page.getByRole('table', { name: 'Effective permissions' }).getByRole('row', { name: /maria MANAGE/ }).waitFor();
      await expect(page.locator('#fg-check-result').textContent()).resolves.toBe('“dora” holds no grant of their own here.');
      await page.context().close();
    },
    120_000,
  );
});
