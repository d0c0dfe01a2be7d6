import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN, adminAuth, removeDir } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps } from '../helpers/python-ops.js';
import { jsonCaller } from '../helpers/admin-calls.js';
import { flowgateClientAt, freePort, startOidcFlowgate, startOidcProvider, type OidcFlowgate, type TestProvider } from '../helpers/oidc-provider.js';
import { expectAccessible } from '../helpers/ui-pages.js';

/**
 * Issue 23, in Debian's chromium against the real MLflow, under a base path and at the root: the
 * Permissions entry on MLflow's pages, sign-in without OIDC, an admin's team setup by clicking and
 * the service account's client working, a manager granting a colleague READ by clicking and the
 * colleague's client reading, no admin screens for others, names shown as text, axe-core on every
 * screen. With FLOWGATE_UI_SCREENSHOTS=1 the base-path run also writes docs/ui/*.png.
 */
const SCENARIOS = [
  { name: 'under /mlflow', basePath: '/mlflow', screens: true },
  { name: 'at /', basePath: '', screens: false },
] as const;

const SCREENSHOTS = process.env.FLOWGATE_UI_SCREENSHOTS === '1';
const EVIL = '<img src=x onerror=alert(1)>';
// MLflow's UI bundle is large; under load it can take long to render (see oidc-browser.test.ts).
const UI_LOAD_MS = 90_000;

describe.each(SCENARIOS)('the Permissions UI $name', ({ basePath, screens }) => {
  let mlflow: MlflowServer;
  let fg: FlowgateProcess;
  let browser: Browser;
  let base = '';
  const suffix = Date.now().toString(36);
  const names = { exp: `maria-exp-${suffix}`, model: `model-${suffix}`, prompt: `prompt-${suffix}`, team: `team-${suffix}` };
  let mariaExp = '';
  const dialogs: string[] = [];

  const { call, basicOf, tokens, withTokens } = jsonCaller(() => base);

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    fg = await startFlowgateProcess({
      env: { FLOWGATE_BASE_PATH: basePath, FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false' },
    });
    base = fg.url;
    await withTokens(['maria', 'colin']);
    // maria creates her experiment and so manages it; colin holds nothing yet.
    mariaExp = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: names.exp }, basicOf('maria'))).experiment_id as string;
    await call('POST', '/api/2.0/mlflow/registered-models/create', { name: names.model });
    await call('POST', '/api/2.0/mlflow/registered-models/create', {
      name: names.prompt,
      tags: [{ key: 'mlflow.prompt.is_prompt', value: 'true' }],
    });
    // A group whose name is markup: every screen must show it as text.
    await call('POST', '/api/2.0/mlflow/permissions/groups', { group_name: EVIL });
    await call('POST', `/api/2.0/mlflow/permissions/groups/${encodeURIComponent(EVIL)}/experiments/${mariaExp}`, { permission: 'READ' });
    browser = await launchBrowser();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.stop();
    await mlflow?.stop();
  });

  async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.dismiss();
    });
    return { context, page };
  }

  async function signIn(page: Page, username: string, token: string, to = '/'): Promise<void> {
    await page.goto(base + to);
    await page.waitForLoadState();
    await page.waitForURL((u) => u.pathname === `${basePath}/flowgate/login`);
    await page.getByLabel('User name').fill(username);
    await page.getByLabel('Access token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => !u.pathname.startsWith(`${basePath}/flowgate/login`));
  }

  /**
   * MLflow greets a fresh browser with dialogs (what's new, tips) that hide the rest of the page from
   * the accessibility tree while open; a user closes them, the test presses Escape and finds the menu by id.
   */
  async function openMenu(page: Page): Promise<void> {
    const button = page.locator('#fg-menu-button');
    await button.waitFor({ timeout: UI_LOAD_MS });
    await page.keyboard.press('Escape');
    await button.click();
    await page.locator('#fg-menu-panel').waitFor();
  }
  const menuItem = (page: Page, text: string) => page.locator('#fg-menu-panel').getByText(text, { exact: true });


  async function shoot(page: Page, name: string): Promise<void> {
    if (screens && SCREENSHOTS) await page.screenshot({ path: `docs/ui/${name}.png`, fullPage: name === 'team-setup' });
  }

  /** Opens a Manage screen by its hash route and waits for its heading. */
  async function screen(page: Page, route: string, heading: string): Promise<void> {
    await page.goto(`${base}/flowgate/ui/#/${route}`);
    await page.getByRole('heading', { level: 1, name: heading }).waitFor();
  }

  async function confirm(page: Page, action: string): Promise<void> {
    const dialog = page.getByRole('dialog');
    await dialog.getByRole('button', { name: action }).click();
    await dialog.waitFor({ state: 'detached' });
  }

  it('MLflow answers users/current on both prefixes as its basic-auth app does', async () => {
    for (const prefix of ['/api/2.0', '/ajax-api/2.0']) {
      const me = await call('GET', `${prefix}/mlflow/users/current`, undefined, basicOf('maria'));
      expect(me).toEqual({ user: { id: expect.any(Number), username: 'maria', is_admin: false }, is_basic_auth: false });
    }
    const anonymous = await fetch(`${base}/ajax-api/2.0/mlflow/users/current`);
    expect(anonymous.status).toBe(401);
  });

  it(
    'an admin signs in without OIDC, sees the Permissions entry on MLflow’s experiment, model and prompt pages, and does the team setup by clicking',
    async () => {
      const { context, page } = await newPage();
      await page.goto(`${base}/`);
      await expectAccessible(page, 'sign-in page');
      await shoot(page, 'sign-in');
      await signIn(page, ADMIN.username, ADMIN.token);
      const session = (await context.cookies()).find((c) => c.name === 'flowgate_session');
      expect(session).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: basePath || '/' });

      for (const [hash, text] of [
        [`#/experiments/${mariaExp}`, names.exp],
        [`#/models/${names.model}`, names.model],
        [`#/prompts/${names.prompt}`, names.prompt],
      ] as const) {
        await page.goto(`${base}/${hash}`);
        await page.getByText(text).first().waitFor({ timeout: UI_LOAD_MS });
        await openMenu(page);
        await expect(page.locator('#fg-menu-user').textContent()).resolves.toBe(ADMIN.username);
        for (const item of ['Manage', 'My access key', 'Sign out'])
          expect(await menuItem(page, item).isVisible(), `${item} on ${hash}`).toBe(true);
        if (hash.startsWith('#/experiments')) await shoot(page, 'mlflow-permissions-menu');
      }
      await menuItem(page, 'Manage').click();
      await page.getByRole('heading', { level: 1, name: 'Experiments' }).waitFor();
      const csp = (await page.request.get(`${base}/flowgate/ui/`)).headers()['content-security-policy'];
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toContain('unsafe-inline');

      await screen(page, 'team-setup', 'Team setup');
      await page.getByLabel('Team group').fill(names.team);
      await page.getByLabel('Shared resource').selectOption('experiments');
      await page.getByLabel('Its name').fill(`${names.team}-shared`);
      await page.getByLabel('Group permission').selectOption('EDIT');
      await page.getByLabel('Service account').fill(`${names.team}-pipelines`);
      await page.getByRole('button', { name: 'Set up the team' }).click();
      const token = (await page.locator('#fg-token').textContent({ timeout: 30_000 })) ?? '';
      expect(token).toMatch(/^fgt_/);
      const exports = (await page.locator('#fg-exports').textContent()) ?? '';
      expect(exports).toContain(`export MLFLOW_TRACKING_URI=${fg.origin}${basePath}/`);
      expect(exports).toContain(`export MLFLOW_TRACKING_USERNAME=${names.team}-pipelines`);
      const secret = (await page.locator('#fg-secret-yaml').textContent()) ?? '';
      expect(secret).toContain('kind: Secret');
      expect(secret).toContain(`MLFLOW_TRACKING_PASSWORD: "${token}"`);
      expect(await page.locator('#fg-poddefault-yaml').textContent()).toContain('kind: PodDefault');
      await expectAccessible(page, 'team setup');
      await shoot(page, 'team-setup');

      // The service account's MLflow client works on the shared experiment, through the same base path.
      const shared = (await call('GET', `/api/2.0/mlflow/experiments/get-by-name?experiment_name=${names.team}-shared`)) as {
        experiment: { experiment_id: string };
      };
      const ops = await runOps(mlflow.venv, `${fg.origin}${basePath}/`, `${names.team}-pipelines`, token, [
        ['run', 'create_run', shared.experiment.experiment_id],
        ['other', 'get_experiment', mariaExp],
      ]);
      expect(ops.run?.ok, JSON.stringify(ops)).toBe(true);
      expect(ops.other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
      const groupGrant = await call('GET', `/api/2.0/mlflow/permissions/groups/${names.team}/experiments`);
      expect(groupGrant.permissions).toEqual([expect.objectContaining({ experiment_id: shared.experiment.experiment_id, permission: 'EDIT' })]);

      // The same for a shared prompt.
      await screen(page, 'team-setup', 'Team setup');
      await page.getByLabel('Team group').fill(`${names.team}-p`);
      await page.getByLabel('Shared resource').selectOption('prompts');
      await page.getByLabel('Its name').fill(`${names.team}-prompt`);
      await page.getByLabel('Service account').fill(`${names.team}-prompt-bot`);
      await page.getByRole('button', { name: 'Set up the team' }).click();
      await page.locator('#fg-token').waitFor();
      expect((await call('GET', `/api/2.0/mlflow/permissions/groups/${names.team}-p/prompts`)).permissions).toEqual([
        expect.objectContaining({ name: `${names.team}-prompt`, permission: 'EDIT' }),
      ]);
      expect((await call('GET', `/api/2.0/mlflow/permissions/users/${names.team}-prompt-bot/prompts`)).permissions).toEqual([
        expect.objectContaining({ name: `${names.team}-prompt`, permission: 'EDIT' }),
      ]);

      // Every admin screen: no serious or critical accessibility problem, names shown as text.
      for (const [route, heading, shows] of [
        ['experiments', 'Experiments', names.exp],
        ['models', 'Registered models', names.model],
        ['prompts', 'Prompts', names.prompt],
        ['users', 'Users', 'colin'],
        ['service-accounts', 'Service accounts', `${names.team}-pipelines`],
        ['groups', 'Groups', names.team],
        ['audit', 'Audit log', `group ${names.team}`],
        ['access-key', 'My access key', 'Create access key'],
      ] as const) {
        await screen(page, route, heading);
        await page.getByRole('main').getByText(shows, { exact: true }).first().waitFor();
        await expectAccessible(page, route);
        // The audit log's and service accounts' pictures are ui-screens.test.ts's (with their dates in a fixed time zone).
        if (route !== 'access-key' && route !== 'audit' && route !== 'service-accounts') await shoot(page, route);
      }
      // Without OIDC there is no choice of sign-in on the create form; everyone signs in with access tokens.
      await screen(page, 'users', 'Users');
      const colinRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'colin', exact: true }) });
      await colinRow.getByText('Access tokens only', { exact: true }).waitFor();
      const adminRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: ADMIN.username, exact: true }) });
      await adminRow.getByText('Administrator (configured)', { exact: true }).waitFor();
      expect(await page.getByLabel('Signs in').count()).toBe(0);
      // Each kind's list holds that kind only: the prompt is not a registered model, nor the model a prompt.
      await screen(page, 'prompts', 'Prompts');
      await page.getByRole('link', { name: names.prompt }).waitFor();
      expect(await page.getByRole('link', { name: names.model }).count()).toBe(0);
      await screen(page, `groups/${encodeURIComponent(EVIL)}`, EVIL);
      await page.getByRole('table', { name: 'Direct grants' }).getByRole('link', { name: mariaExp }).waitFor();
      await expectAccessible(page, 'group page');
      await shoot(page, 'group');
      await screen(page, `experiments/${mariaExp}`, names.exp);
      await page.getByRole('table', { name: 'Grants' }).getByText(EVIL).waitFor();
      expect(await page.locator('img[src="x"]').count()).toBe(0);
      await expectAccessible(page, 'experiment page');
      await shoot(page, 'experiment-grants');

      // Change, then revoke, a grant by clicking; each confirmed first.
      const evilGrant = `/api/2.0/mlflow/permissions/groups/${encodeURIComponent(EVIL)}/experiments/${mariaExp}`;
      const row = page.getByRole('table', { name: 'Grants' }).getByRole('row').filter({ hasText: EVIL });
      await row.getByRole('combobox').selectOption('EDIT');
      await row.getByRole('button', { name: 'Change' }).click();
      await confirm(page, 'Change');
      expect(await call('GET', evilGrant)).toMatchObject({ permission: { permission: 'EDIT' } });
      await row.getByRole('button', { name: `Revoke ${EVIL}` }).click();
      await confirm(page, 'Revoke');
      await row.waitFor({ state: 'detached' });
      expect((await fetch(base + evilGrant, { headers: { Authorization: adminAuth() } })).status).toBe(404);
      expect(dialogs).toEqual([]);
      await context.close();
    },
    240_000,
  );

  it(
    'a user with MANAGE on one experiment grants a colleague READ by clicking; the colleague’s client can then read it; no admin screens for them',
    async () => {
      const before = await runOps(mlflow.venv, `${fg.origin}${basePath}/`, 'colin', tokens.colin!, [['get', 'get_experiment', mariaExp]]);
      expect(before.get).toEqual({ ok: false, error: 'PERMISSION_DENIED' });

      const { context, page } = await newPage();
      // The screen asked for (after the #, which only the browser knows) is where sign-in leads back to.
      await signIn(page, 'maria', tokens.maria!, '/flowgate/ui/#/access-key');
      await page.getByRole('heading', { level: 1, name: 'My access key' }).waitFor();
      await screen(page, 'experiments', 'Experiments');
      // Only what she manages is listed, and no administration screen is offered.
      await page.getByRole('link', { name: names.exp }).waitFor();
      await shoot(page, 'experiments-as-manager');
      expect(await page.getByRole('link', { name: `${names.team}-shared` }).count()).toBe(0);
      for (const admin of ['Users', 'Service accounts', 'Groups', 'Team setup', 'Audit log'])
        expect(await page.getByRole('link', { name: admin, exact: true }).count(), admin).toBe(0);
      await page.goto(`${base}/flowgate/ui/#/users`);
      await page.getByRole('alert').getByText('This screen is for administrators.').waitFor();
      const refused = await page.evaluate(async (b) => (await fetch(`${b}/ajax-api/2.0/mlflow/permissions/ui/users`)).status, base);
      expect(refused).toBe(403);

      await screen(page, 'experiments', 'Experiments');
      await page.getByRole('link', { name: names.exp }).click();
      await page.getByRole('heading', { level: 1, name: names.exp }).waitFor();
      await page.locator('#fg-grant-name').fill('colin');
      await page.locator('#fg-grant-permission').selectOption('READ');
      await page.getByRole('button', { name: 'Grant', exact: true }).click();
      await confirm(page, 'Grant');
      const grants = page.getByRole('table', { name: 'Grants' });
      await grants.getByRole('cell', { name: 'colin', exact: true }).waitFor();
      const effective = page.getByRole('table', { name: 'Effective permissions' });
      await effective.getByRole('row', { name: /colin READ direct grant/ }).waitFor();
      await page.locator('#fg-check-user').fill(`${names.team}-pipelines`);
      await page.getByRole('button', { name: 'Check', exact: true }).click();
      // A manager is told about the grants here only: a service account holding none reads as nobody would.
      await page.locator('#fg-check-result').getByText(`“${names.team}-pipelines” holds no grant of their own here.`).waitFor();
      await expectAccessible(page, 'resource page (manager)');
      await shoot(page, 'experiment-as-manager');

      const after = await runOps(mlflow.venv, `${fg.origin}${basePath}/`, 'colin', tokens.colin!, [
        ['get', 'get_experiment', mariaExp],
        ['write', 'create_run', mariaExp],
      ]);
      expect(after.get).toEqual({ ok: true, value: names.exp });
      expect(after.write).toEqual({ ok: false, error: 'PERMISSION_DENIED' });

      // A changing request without the page's origin or CSRF token is refused even with her session.
      const cookie = (await context.cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
      const forged = await fetch(`${base}/ajax-api/2.0/mlflow/permissions/users/colin/experiments/${mariaExp}`, {
        method: 'DELETE',
        headers: { cookie, origin: 'https://evil.example' },
      });
      expect(forged.status).toBe(403);

      // Her access key, created on her screen, works with the client.
      await screen(page, 'access-key', 'My access key');
      await page.getByRole('button', { name: 'Create access key' }).click();
      await confirm(page, 'Create access key');
      const key = (await page.locator('#fg-token').textContent()) ?? '';
      await expectAccessible(page, 'access key shown');
      await shoot(page, 'access-key');
      const mine = await runOps(mlflow.venv, `${fg.origin}${basePath}/`, 'maria', key, [['get', 'get_experiment', mariaExp]]);
      expect(mine.get).toEqual({ ok: true, value: names.exp });
      tokens.maria = key;
      await context.close();
    },
    180_000,
  );

  it('a session that ends while MLflow’s UI is open leads to sign-in, and signing out ends it', async () => {
    const { context, page } = await newPage();
    await signIn(page, 'maria', tokens.maria!);
    await page.locator('#fg-menu-button').waitFor({ timeout: UI_LOAD_MS });
    await call('DELETE', '/api/2.0/mlflow/permissions/users/maria/sessions');
    // Any of MLflow's calls now gets a 401 (without the Basic challenge, so no browser password dialog).
    await page
      .evaluate((b) => fetch(`${b}/ajax-api/2.0/mlflow/experiments/search`, { method: 'POST', body: '{}' }).then((r) => r.status), base)
      .catch(() => 'navigated away');
    await page.waitForURL((u) => u.pathname === `${basePath}/flowgate/login`);

    await signIn(page, 'maria', tokens.maria!);
    await openMenu(page);
    await menuItem(page, 'Sign out').click();
    await page.waitForURL((u) => u.pathname === `${basePath}/flowgate/logged-out`);
    const status = await page.evaluate(async (b) => (await fetch(`${b}/ajax-api/2.0/mlflow/users/current`)).status, base);
    expect(status).toBe(401);
    await context.close();
  }, 180_000);
});

describe('the Users screen with OIDC configured', () => {
  let mlflow: MlflowServer;
  let idp: TestProvider;
  let fg: OidcFlowgate;
  let browser: Browser;
  let base = '';

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = await startOidcProvider({
      ...flowgateClientAt(base),
      accounts: [
        { username: 'ada', name: 'Ada Admin', roles: ['mlflow-admin'] },
        { username: 'nora-at-idp', preferredUsername: 'nora', name: 'Nora', roles: [] },
      ],
    });
    fg = await startOidcFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_OIDC_ISSUER_URL: idp.issuer, FLOWGATE_OIDC_ADMIN_ROLE: 'mlflow-admin' }, port);
    browser = await launchBrowser();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.close();
    await idp?.close();
    await mlflow?.stop();
    if (fg) removeDir(fg.dir);
  });

  /** Signs in at the provider's login form and comes back to the Manage screens. */
  async function signInAtProvider(page: Page, login: string): Promise<void> {
    await page.goto(`${base}/flowgate/login?return_to=${encodeURIComponent('/flowgate/ui/')}`);
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await page.fill('input[name="login"]', login);
    await page.fill('input[name="password"]', 'any password');
    await page.click('button[type="submit"]');
    await page.waitForURL((u) => u.href.startsWith(base) && u.pathname.startsWith('/flowgate/ui/'));
  }
  const rowOf = (page: Page, username: string) => page.getByRole('row').filter({ has: page.getByRole('link', { name: username, exact: true }) });
  const userJson = async (username: string) =>
    ((await (await fetch(`${base}/api/2.0/mlflow/permissions/users/${username}`, { headers: { authorization: adminAuth() } })).json()) as { user: Record<string, unknown> }).user;

  it('an admin creates a person who signs in with the provider (the default) and one with access tokens only; the list shows who signs in how and who is linked yet', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await signInAtProvider(page, 'ada');
    // Landing on /flowgate/ui/ and then going to its #/users twin is a same-document move: follow the link.
    await page.getByRole('navigation', { name: 'Permissions' }).getByRole('link', { name: 'Users', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    const choice = page.getByLabel('Signs in');
    await choice.waitFor();
    expect(await choice.inputValue()).toBe('oidc');
    expect(await choice.locator('option').allTextContents()).toEqual(['With the identity provider', 'With access tokens only']);
    await rowOf(page, 'ada').getByText('Identity provider (linked)', { exact: true }).waitFor();
    await rowOf(page, ADMIN.username).getByText('Access tokens only', { exact: true }).waitFor();

    await page.getByLabel('User name').fill('nora');
    await page.getByRole('button', { name: 'Create user' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('who signs in with the identity provider').waitFor();
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'detached' });
    await rowOf(page, 'nora').getByText('Identity provider (awaiting first sign-in)', { exact: true }).waitFor();

    await page.getByLabel('User name').fill('tim');
    await choice.selectOption('local');
    await page.getByRole('button', { name: 'Create user' }).click();
    await dialog.getByText('who signs in with access tokens only').waitFor();
    await dialog.getByRole('button', { name: 'Create' }).click();
    await dialog.waitFor({ state: 'detached' });
    await rowOf(page, 'tim').getByText('Access tokens only', { exact: true }).waitFor();
    expect(await userJson('nora')).toMatchObject({ sign_in: 'oidc', oidc_linked: false });
    expect(await userJson('tim')).toMatchObject({ sign_in: 'local', oidc_linked: false });
    await expectAccessible(page, 'users (OIDC)');

    // Nora's first sign-in at the provider links her; the admin's list says so.
    const noraContext = await browser.newContext();
    await signInAtProvider(await noraContext.newPage(), 'nora-at-idp');
    await noraContext.close();
    await page.reload();
    await rowOf(page, 'nora').getByText('Identity provider (linked)', { exact: true }).waitFor();
    expect(await userJson('nora')).toMatchObject({ sign_in: 'oidc', oidc_linked: true });
    await page.goto(`${base}/flowgate/ui/#/users/nora`);
    await page.getByText('signs in: identity provider (linked)').waitFor();
    await context.close();
  }, 180_000);

  it('the create form waits for the server to say how people sign in, and keeps the choice made while the list reloads', async () => {
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    await signInAtProvider(page, 'ada');
    let release = () => {};
    let listed = 0;
    const hold = () => new Promise<void>((resolve) => (release = resolve));
    let held = hold();
    await page.route(
      (u) => u.pathname.endsWith('/permissions/ui/users') && u.searchParams.get('type') === 'user',
      async (route) => {
        listed += 1;
        await held;
        await route.continue();
      },
    );
    await page.getByRole('navigation', { name: 'Permissions' }).getByRole('link', { name: 'Users', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    await page.getByLabel('User name').fill('ivo');
    const create = page.getByRole('button', { name: 'Create user' });
    await expect.poll(() => listed).toBe(1);
    // Not yet known whether people sign in with the provider: no creation without that choice.
    expect(await create.isDisabled()).toBe(true);
    release();
    const choice = page.getByLabel('Signs in');
    await choice.selectOption('local');
    // A search reloads the list: the choice stays, and so does what a creation sends.
    held = hold();
    await page.getByLabel('Search users').fill('iv');
    await expect.poll(() => listed).toBe(2);
    expect(await choice.inputValue()).toBe('local');
    await create.click();
    const dialog = page.getByRole('dialog');
    await dialog.getByText('Create user “ivo”, who signs in with access tokens only?').waitFor();
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    release();
    await context.close();
  }, 180_000);
});
