import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN } from '../helpers/flowgate.js';
import { expectAccessible, signInToManage, startUiStack, type UiStack } from '../helpers/ui-pages.js';

/**
 * Issue 38's screens, in Debian's chromium against the real MLflow under a base path, in a browser
 * set to Tokyo's time zone and British English (so a date shown in UTC or as ISO text fails): a
 * confirmation never outlives its page; the audit log as readable text (whole words, old → new, local
 * dates); the service accounts' token states; a read-only user's list of what they can access and
 * why; no grant form on a resource MLflow does not have; team setup refusing a past expiry before
 * anything is applied, retried after failing half-way, and never showing MLflow's SQL.
 * With FLOWGATE_UI_SCREENSHOTS=1 it also writes those screens' docs/ui/*.png.
 */
const BASE_PATH = '/mlflow';
const LOCALE = 'en-GB';
const TIME_ZONE = 'Asia/Tokyo';
const SCREENSHOTS = process.env.FLOWGATE_UI_SCREENSHOTS === '1';

const localDateTime = (iso: string) => new Intl.DateTimeFormat(LOCALE, { dateStyle: 'medium', timeStyle: 'short', timeZone: TIME_ZONE }).format(new Date(iso));
const localDay = (iso: string) => new Intl.DateTimeFormat(LOCALE, { dateStyle: 'medium', timeZone: TIME_ZONE }).format(new Date(iso));

describe('the Manage screens (issue 38)', () => {
  let stack: UiStack;
  let base = '';
  const suffix = Date.now().toString(36);
  const ids = { a: '', b: '', c: '' };
  const names = { a: `alpha-${suffix}`, b: `beta-${suffix}`, c: `ro-${suffix}/one`, model: `model-${suffix}` };
  const contexts: BrowserContext[] = [];

  const { call, tokens, withTokens } = jsonCaller(() => base);
  const status = async (path: string) => (await fetch(base + path, { headers: { Authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.token}`).toString('base64')}` } })).status;

  beforeAll(async () => {
    stack = await startUiStack(BASE_PATH);
    base = stack.url;
    await withTokens(['colin', 'rita']);
    ids.a = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: names.a })).experiment_id as string;
    ids.b = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: names.b })).experiment_id as string;
    ids.c = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: names.c })).experiment_id as string;
    await call('POST', '/api/2.0/mlflow/registered-models/create', { name: names.model });
    await call('POST', `/api/2.0/mlflow/permissions/users/colin/experiments/${ids.a}`, { permission: 'READ' });
    // rita reads A by her own grant, B through her group, C through a pattern grant on its name; she manages nothing.
    await call('POST', `/api/2.0/mlflow/permissions/users/rita/experiments/${ids.a}`, { permission: 'READ' });
    await call('POST', '/api/2.0/mlflow/permissions/groups', { group_name: `readers-${suffix}` });
    await call('POST', `/api/2.0/mlflow/permissions/groups/readers-${suffix}/users`, { username: 'rita' });
    await call('POST', `/api/2.0/mlflow/permissions/groups/readers-${suffix}/experiments/${ids.b}`, { permission: 'READ' });
    await call('POST', '/api/2.0/mlflow/permissions/users/rita/patterns', { resource_type: 'experiment', pattern: `ro-${suffix}/*`, permission: 'READ' });
  }, 240_000);

  afterAll(async () => {
    for (const c of contexts) await c.close().catch(() => undefined);
    await stack?.stop();
  });

  async function signedIn(username: string, token: string): Promise<Page> {
    const context = await stack.browser.newContext({ viewport: { width: 1400, height: 900 }, locale: LOCALE, timezoneId: TIME_ZONE });
    contexts.push(context);
    const page = await context.newPage();
    await signInToManage(page, base, BASE_PATH, username, token);
    return page;
  }
  /** A hash route, followed as a link is (a same-document move, as a user's click or Back makes). */
  async function go(page: Page, route: string, heading: string): Promise<void> {
    await page.evaluate(`location.hash = ${JSON.stringify(`#/${route}`)}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }
  async function shoot(page: Page, name: string, fullPage = false): Promise<void> {
    if (SCREENSHOTS) await page.screenshot({ path: `docs/ui/${name}.png`, fullPage });
  }

  it('a confirmation opened on one experiment’s page is gone once another experiment’s page opens, and nothing was applied', async () => {
    const page = await signedIn(ADMIN.username, ADMIN.token);
    await go(page, `experiments/${ids.a}`, names.a);
    await page.getByRole('table', { name: 'Grants' }).getByRole('cell', { name: 'colin', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Revoke colin' }).click();
    await page.getByRole('dialog').getByText(`on experiment “${names.a}”`, { exact: false }).waitFor();

    await go(page, `experiments/${ids.b}`, names.b);
    expect(await page.getByRole('dialog').count()).toBe(0);
    await page.keyboard.press('Enter');
    expect(await status(`/api/2.0/mlflow/permissions/users/colin/experiments/${ids.a}`)).toBe(200);
  }, 120_000);

  it('no change is offered on an experiment’s page before its name is known: its confirmation names it, not its ID', async () => {
    const page = await signedIn(ADMIN.username, ADMIN.token);
    // The page asks MLflow for the experiment twice: its name, then (as reading it) whether it exists.
    const held: (() => void)[] = [];
    await page.route(
      (u) => u.pathname.endsWith('/experiments/get') && u.searchParams.get('experiment_id') === ids.a,
      async (route) => {
        await new Promise<void>((resolve) => held.push(resolve));
        await route.continue();
      },
    );
    await page.evaluate(`location.hash = ${JSON.stringify(`#/experiments/${ids.a}`)}`);
    await page.getByRole('heading', { level: 1, name: `(ID ${ids.a})` }).waitFor();
    const revoke = page.getByRole('button', { name: 'Revoke colin' });
    await revoke.waitFor();
    await page.locator('#fg-grant-name').fill('rita');
    const grant = page.getByRole('button', { name: 'Grant', exact: true });
    await expect.poll(() => held.length).toBe(2);
    expect(await revoke.isDisabled()).toBe(true);
    expect(await grant.isDisabled()).toBe(true);
    // MLflow says it exists; its name is still being asked.
    const exists = page.waitForResponse((r) => r.url().includes('/experiments/get'));
    held[1]!();
    await exists;
    // Still disabled a while after (without the name the Grant button was enabled as the answer was read).
    for (let i = 0; i < 10; i++) {
      await page.evaluate(() => new Promise((r) => setTimeout(r, 100)));
      expect(await grant.isDisabled()).toBe(true);
      expect(await revoke.isDisabled()).toBe(true);
    }
    held[0]!();
    await page.getByRole('heading', { level: 1, name: names.a }).waitFor();
    await grant.click();
    await page.getByRole('dialog').getByText(`Give user “rita” READ on experiment “${names.a}”?`).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await revoke.click();
    await page.getByRole('dialog').getByText(`grant of user “colin” on experiment “${names.a}”?`).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    expect(await status(`/api/2.0/mlflow/permissions/users/colin/experiments/${ids.a}`)).toBe(200);
  }, 120_000);

  it('the audit log shows whole words, each change as old → new, and local dates', async () => {
    await call('PATCH', `/api/2.0/mlflow/permissions/users/colin/experiments/${ids.a}`, { permission: 'EDIT' });
    await call('POST', '/api/2.0/mlflow/users/create', { username: `sa-active-${suffix}`, is_service_account: true });
    const issued = await call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: `sa-active-${suffix}` });
    const entries = (await call('GET', '/api/2.0/mlflow/permissions/ui/audit?max_results=20')).entries as { at: string; action: string; target: string }[];
    const update = entries.find((e) => e.action === 'grant.update' && e.target === `experiment:${ids.a}/user:colin`)!;

    const page = await signedIn(ADMIN.username, ADMIN.token);
    await go(page, 'audit', 'Audit log');
    const table = page.getByRole('table', { name: 'Audit log' });
    expect(await table.locator('th').allTextContents()).toEqual(['When', 'Actor', 'Action', 'Target', 'Change']);
    const row = table.getByRole('row').filter({ hasText: 'grant.update' }).filter({ hasText: 'for user colin' });
    await row.waitFor();
    expect(await row.locator('td').allTextContents()).toEqual([localDateTime(update.at), ADMIN.username, 'grant.update', `experiment ${ids.a}for user colin`, 'READ → EDIT']);
    const token = table.getByRole('row').filter({ hasText: 'token.issue' }).filter({ hasText: `sa-active-${suffix}` });
    expect(await token.locator('td').nth(4).innerText()).toBe(`token id: ${(await tokenIdOf(`sa-active-${suffix}`))}\nexpires at: ${localDateTime(issued.expiration as string)}`);
    const created = table.getByRole('row').filter({ hasText: 'user.create' }).filter({ hasText: `sa-active-${suffix}` });
    expect(await created.locator('td').nth(4).innerText()).toContain('is service account: yes');

    const cells = await table.locator('td').allTextContents();
    expect(cells.filter((t) => /[{}"]|\d{4}-\d{2}-\d{2}T/.test(t)), 'no JSON, no ISO instants').toEqual([]);
    // Every word sits on one line: a word broken across lines has parts at two heights.
    const broken = (await page.evaluate(`(() => {
      const found = [];
      const walk = document.createTreeWalker(document.querySelector('table[aria-label="Audit log"]'), NodeFilter.SHOW_TEXT);
      while (walk.nextNode()) {
        const n = walk.currentNode;
        for (const m of n.data.matchAll(/\\S+/g)) {
          const r = document.createRange();
          r.setStart(n, m.index);
          r.setEnd(n, m.index + m[0].length);
          const tops = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
          if (tops.size > 1) found.push(m[0]);
        }
      }
      return found;
    })()`)) as string[];
    expect(broken).toEqual([]);
    await expectAccessible(page, 'audit log');
    await shoot(page, 'audit');
  }, 120_000);

  async function tokenIdOf(username: string): Promise<number> {
    const entries = (await call('GET', `/api/2.0/mlflow/permissions/ui/audit?action=token.issue&target=${encodeURIComponent(`user:${username}`)}`)).entries as {
      new_value: { token_id: number };
    }[];
    return entries[0]!.new_value.token_id;
  }

  it('the service accounts screen shows each account’s token state and its date', async () => {
    for (const name of [`sa-revoked-${suffix}`, `sa-none-${suffix}`]) await call('POST', '/api/2.0/mlflow/users/create', { username: name, is_service_account: true });
    await call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: `sa-revoked-${suffix}` });
    await call('DELETE', `/api/2.0/mlflow/permissions/users/sa-revoked-${suffix}/access-token`);
    const listed = (await call('GET', `/api/2.0/mlflow/permissions/ui/users?type=service_account&q=${suffix}`)).users as { username: string; token: Record<string, string> }[];
    const state = Object.fromEntries(listed.map((u) => [u.username, u.token]));
    expect(state[`sa-active-${suffix}`]).toEqual({ state: 'active', expires_at: expect.any(String) });
    expect(state[`sa-revoked-${suffix}`]).toEqual({ state: 'revoked', revoked_at: expect.any(String) });
    expect(state[`sa-none-${suffix}`]).toEqual({ state: 'none' });

    const page = await signedIn(ADMIN.username, ADMIN.token);
    await go(page, 'service-accounts', 'Service accounts');
    // The token column, found by its heading (the screen has an Origin column too).
    const headings = await page.getByRole('table', { name: 'Service accounts' }).getByRole('columnheader').allTextContents();
    const tokenColumn = headings.findIndex((h) => h.trim() === 'Token');
    expect(tokenColumn).toBeGreaterThan(0);
    const cellOf = (name: string) =>
      page.getByRole('table', { name: 'Service accounts' }).getByRole('row').filter({ has: page.getByRole('link', { name, exact: true }) }).locator('td').nth(tokenColumn);
    await expect(cellOf(`sa-active-${suffix}`).textContent()).resolves.toBe(`Active, expires ${localDay(state[`sa-active-${suffix}`]!.expires_at!)}`);
    await expect(cellOf(`sa-revoked-${suffix}`).textContent()).resolves.toBe(`Revoked on ${localDay(state[`sa-revoked-${suffix}`]!.revoked_at!)}`);
    await expect(cellOf(`sa-none-${suffix}`).textContent()).resolves.toBe('No token');
    // New tokens start at the server's default expiry; a day past its maximum is not offered.
    const createToken = page.getByRole('button', { name: `Create token for sa-none-${suffix}` });
    await expect.poll(() => createToken.isEnabled()).toBe(true);
    await page.getByLabel('New tokens expire on').fill(`${new Date().getFullYear() + 2}-01-01`);
    await page.getByRole('alert').getByText('Tokens live at most 366 days here').waitFor();
    expect(await createToken.isDisabled()).toBe(true);
    await expectAccessible(page, 'service accounts');
    await shoot(page, 'service-accounts');
  }, 120_000);

  it('a user with READ grants only sees what they can access and why, by their own grant, a group’s and a pattern’s', async () => {
    const page = await signedIn('rita', tokens.rita!);
    await go(page, 'experiments', 'Experiments');
    const rowOf = (name: string) => page.getByRole('table', { name: 'Experiments' }).getByRole('row').filter({ hasText: name });
    await rowOf(names.a).waitFor();
    await expect(rowOf(names.a).locator('td').allTextContents()).resolves.toEqual([names.a, ids.a, 'READ', 'direct grant']);
    await expect(rowOf(names.b).locator('td').allTextContents()).resolves.toEqual([names.b, ids.b, 'READ', `through group readers-${suffix}`]);
    await expect(rowOf(names.c).locator('td').allTextContents()).resolves.toEqual([names.c, ids.c, 'READ', 'pattern grant (matches its name)']);
    // She manages none of them: no page of grants is offered, and "only what you manage" is empty.
    expect(await page.getByRole('table', { name: 'Experiments' }).getByRole('link').count()).toBe(0);
    await expectAccessible(page, 'experiments (read only)');
    await shoot(page, 'experiments-read-only');
    await page.getByLabel('Show').selectOption('managed');
    await page.getByText('No experiments on this page that you manage.').waitFor();
  }, 120_000);

  it('the grant form is not offered on a registered model or experiment MLflow does not have', async () => {
    const page = await signedIn(ADMIN.username, ADMIN.token);
    const missing = `no-such-model-${suffix}`;
    await go(page, `models/${missing}`, missing);
    await page.locator('#fg-no-resource').getByText(`MLflow has no registered model “${missing}”`, { exact: false }).waitFor();
    expect(await page.locator('#fg-grant-name').count()).toBe(0);
    await shoot(page, 'grant-missing-resource');
    await go(page, 'experiments/987654321', '987654321');
    await page.locator('#fg-no-resource').waitFor();
    expect(await page.locator('#fg-grant-name').count()).toBe(0);
    // One that exists: the form is there.
    await go(page, `models/${names.model}`, names.model);
    await page.locator('#fg-grant-name').waitFor();
    // The form shows while MLflow is asked; enabled once it has answered that the model exists.
    await expect.poll(() => page.getByRole('button', { name: 'Grant', exact: true }).isEnabled(), { timeout: 30_000 }).toBe(true);
    expect(await page.locator('#fg-no-resource').count()).toBe(0);

    // MLflow failing the look-up is no answer: the form stays disabled and says why, never "MLflow has no …".
    await page.route(/registered-models\/get/, (route) =>
      route.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error_code: 'TEMPORARILY_UNAVAILABLE', message: 'MLflow is restarting' }) }),
    );
    await go(page, 'models', 'Registered models');
    await go(page, `models/${names.model}`, names.model);
    await page.getByRole('alert').getByText('MLflow is restarting').waitFor();
    expect(await page.getByRole('button', { name: 'Grant', exact: true }).isDisabled()).toBe(true);
    expect(await page.locator('#fg-no-resource').count()).toBe(0);
  }, 120_000);

  it('team setup refuses a past expiry before applying anything, goes on after a half-way failure, and never shows MLflow’s SQL', async () => {
    const page = await signedIn(ADMIN.username, ADMIN.token);
    const team = `team38-${suffix}`;
    await go(page, 'team-setup', 'Team setup');
    const fill = async (account: string, expiry?: string) => {
      await page.getByLabel('Team group').fill(team);
      await page.getByLabel('Shared resource').selectOption('experiments');
      await page.getByLabel('Its name').fill(`${team}-shared`);
      await page.getByLabel('Service account').fill(account);
      if (expiry) await page.getByLabel('Token expires on').fill(expiry);
    };
    const today = new Intl.DateTimeFormat('en-CA', { timeZone: TIME_ZONE }).format(new Date());
    expect((await page.getByLabel('Token expires on').getAttribute('min'))! > today).toBe(true);

    await fill(`${team}-bot`, '2020-01-01');
    await page.getByRole('button', { name: 'Set up the team' }).click();
    await page.getByRole('alert').getByText('The expiry day must be after today').waitFor();
    expect(await status(`/api/2.0/mlflow/experiments/get-by-name?experiment_name=${team}-shared`)).toBe(404);
    expect(await status(`/api/2.0/mlflow/permissions/groups/${team}/users`)).toBe(404);
    expect(await status(`/api/2.0/mlflow/permissions/users/${team}-bot`)).toBe(404);

    // Past the server's maximum (FLOWGATE_TOKEN_MAX_DAYS, 366 here): refused before anything is applied, not at step 4.
    const max = (await page.getByLabel('Token expires on').getAttribute('max'))!;
    expect(max > today).toBe(true);
    await page.getByLabel('Token expires on').fill(`${new Date().getFullYear() + 2}-01-01`);
    await page.getByRole('button', { name: 'Set up the team' }).click();
    await page.getByRole('alert').getByText('Tokens live at most 366 days here').waitFor();
    expect(await status(`/api/2.0/mlflow/experiments/get-by-name?experiment_name=${team}-shared`)).toBe(404);
    expect(await status(`/api/2.0/mlflow/permissions/users/${team}-bot`)).toBe(404);

    // colin is a person: step 3 fails, after steps 1 and 2.
    await page.getByLabel('Token expires on').fill('2099-01-01'.replace('2099', String(new Date().getFullYear() + 1)));
    await page.getByLabel('Service account').fill('colin');
    await page.getByRole('button', { name: 'Set up the team' }).click();
    await page.getByRole('alert').getByText('“colin” is a person, not a service account').waitFor();
    const progress = page.getByRole('list', { name: 'Progress' });
    expect(await progress.locator('li').allTextContents()).toEqual([
      `✓ 1. Create experiment “${team}-shared”`,
      `✓ 2. Grant group “${team}” EDIT on it`,
      `✗ 3. Create service account “colin” with EDIT on the experiment`,
    ]);
    await page.locator('#fg-retry-hint').waitFor();
    await shoot(page, 'team-setup-retry', true);

    // Another team's service account: step 3 refuses it, and its token still works.
    const otherBot = `other38-${suffix}-bot`;
    await call('POST', '/api/2.0/mlflow/users/create', { username: otherBot, display_name: 'finance pipelines', is_service_account: true });
    const otherToken = ((await call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: otherBot })) as { token: string }).token;
    await page.getByLabel('Service account').fill(otherBot);
    await page.getByRole('button', { name: 'Set up the team' }).click();
    await page.getByRole('alert').getByText(`Service account “${otherBot}” exists and is not this team’s`).waitFor();
    const botCall = await fetch(`${base}/api/2.0/mlflow/users/current`, { headers: { Authorization: `Basic ${Buffer.from(`${otherBot}:${otherToken}`).toString('base64')}` } });
    expect(botCall.status).toBe(200);

    await page.getByLabel('Service account').fill(`${team}-bot`);
    await page.getByRole('button', { name: 'Set up the team' }).click();
    await page.locator('#fg-token').waitFor({ timeout: 30_000 });
    expect((await progress.locator('li').allTextContents()).slice(0, 2)).toEqual([
      `✓ 1. Create experiment “${team}-shared” (done by the earlier run)`,
      `✓ 2. Grant group “${team}” EDIT on it (done by the earlier run)`,
    ]);
    const shared = ((await call('GET', `/api/2.0/mlflow/experiments/get-by-name?experiment_name=${team}-shared`)).experiment as { experiment_id: string }).experiment_id;
    expect((await call('GET', `/api/2.0/mlflow/permissions/users/${team}-bot/experiments`)).permissions).toEqual([expect.objectContaining({ experiment_id: shared, permission: 'EDIT' })]);
    expect((await call('GET', `/api/2.0/mlflow/permissions/groups/${team}/experiments`)).permissions).toEqual([expect.objectContaining({ experiment_id: shared, permission: 'EDIT' })]);
    expect(await status(`/api/2.0/mlflow/permissions/users/colin/experiments/${shared}`)).toBe(404);

    // A registered model of that name exists already: MLflow's answer carries its SQL, the screen never does.
    await go(page, 'team-setup', 'Team setup');
    await page.getByLabel('Team group').fill(`${team}-m`);
    await page.getByLabel('Shared resource').selectOption('models');
    await page.getByLabel('Its name').fill(names.model);
    await page.getByLabel('Service account').fill(`${team}-m-bot`);
    await page.getByRole('button', { name: 'Set up the team' }).click();
    const alert = page.getByRole('alert');
    await alert.getByText(`A registered model named “${names.model}” already exists`).waitFor();
    const shown = (await page.getByRole('main').innerText()).toLowerCase();
    for (const word of ['sql', 'sqlite', 'insert into', 'integrityerror', 'unique constraint']) expect(shown, word).not.toContain(word);
    await expectAccessible(page, 'team setup (failed)');
  }, 180_000);
});
