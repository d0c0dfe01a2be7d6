import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { expectAccessible, signInToManage } from '../helpers/ui-pages.js';

/**
 * The AI gateway's kinds on the Manage screens, in Debian's chromium against the real MLflow under a
 * base path: MLflow lists endpoints, secrets and model definitions whole (no paging), so the screens
 * search and page them themselves; nothing of the gateway is created here (MLflow's AI Gateway page
 * takes the secret values); the permission selects offer USE on the gateway's kinds only; Explain
 * offers read and use, each as a real MLflow call. A manager who is not an admin sees the endpoints
 * she manages.
 */
const BASE_PATH = '/mlflow';
const GW = '/api/3.0/mlflow/gateway';
const PAGE = 25;

describe('the gateway on the Manage screens', () => {
  let mlflow: MlflowServer;
  let fg: FlowgateProcess;
  let browser: Browser;
  let base = '';
  const suffix = Date.now().toString(36);
  const names = {
    secret: `ui-key-${suffix}`,
    definition: `ui-def-${suffix}`,
    endpoint: `ui-chat-${suffix}`,
    bulk: (i: number) => `ui-bulk-${suffix}-${String(i).padStart(2, '0')}`,
    exp: `ui-gw-exp-${suffix}`,
  };
  const ids: Record<string, string> = {};
  const { call, tokens, withTokens, basicOf } = jsonCaller(() => base);

  beforeAll(async () => {
    mlflow = await startMlflowServer({ env: { MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES: 'http,https', MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS: 'true' } });
    fg = await startFlowgateProcess({ env: { FLOWGATE_BASE_PATH: BASE_PATH, FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false' } });
    base = fg.url;
    browser = await launchBrowser();
    await withTokens(['maria', 'colin']);
    const secret = await call('POST', `${GW}/secrets/create`, {
      secret_name: names.secret,
      secret_value: { api_key: 'sk-ui-never-shown' },
      provider: 'openai',
      auth_config: { api_base: 'http://127.0.0.1:9/v1' },
    });
    ids.secret = (secret.secret as { secret_id: string }).secret_id;
    const definition = await call('POST', `${GW}/model-definitions/create`, { name: names.definition, secret_id: ids.secret, provider: 'openai', model_name: 'gpt-4o' });
    ids.definition = (definition.model_definition as { model_definition_id: string }).model_definition_id;
    const routed = [{ model_definition_id: ids.definition, linkage_type: 'PRIMARY', weight: 1 }];
    await call('POST', `${GW}/endpoints/create`, { name: names.endpoint, model_configs: routed });
    // More than a page of endpoints, for the screens' own paging.
    for (let i = 0; i < PAGE + 2; i++) await call('POST', `${GW}/endpoints/create`, { name: names.bulk(i), model_configs: routed });
    await call('POST', `/api/2.0/mlflow/permissions/users/maria/gateways/endpoints/${names.endpoint}`, { permission: 'MANAGE' });
    await call('POST', '/api/2.0/mlflow/experiments/create', { name: names.exp });
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
    'an admin lists, searches and pages each gateway kind, grants USE on an endpoint by clicking, and explains read and use',
    async () => {
      const page = await signedIn(ADMIN.username, ADMIN.token);
      const nav = page.getByRole('navigation', { name: 'Permissions' });
      for (const title of ['Gateway secrets', 'Gateway model definitions', 'Gateway endpoints']) await nav.getByRole('link', { name: title, exact: true }).waitFor();

      // Endpoints: MLflow's one list, searched and cut into pages here, in name order.
      await screen(page, 'gateway-endpoints', 'Gateway endpoints');
      const list = page.getByRole('table', { name: 'Gateway endpoints' });
      await list.getByRole('link', { name: names.bulk(0), exact: true }).waitFor();
      expect(await list.getByRole('link').count()).toBe(PAGE);
      expect(await page.getByRole('button', { name: /create/i }).count()).toBe(0);
      await page.getByText('MLflow’s AI Gateway page').waitFor();
      await expectAccessible(page, 'gateway endpoints');
      await page.getByRole('button', { name: 'Next', exact: true }).click();
      await list.getByRole('link', { name: names.endpoint, exact: true }).waitFor();
      expect(await list.getByRole('link', { name: names.bulk(0), exact: true }).count()).toBe(0);
      await page.getByLabel('Search gateway endpoints').fill('UI-CHAT');
      await list.getByRole('link', { name: names.bulk(PAGE), exact: true }).waitFor({ state: 'detached' });
      await expect.poll(() => list.getByRole('link').allTextContents(), { timeout: 10_000 }).toEqual([names.endpoint]);

      for (const [route, heading, name] of [
        ['gateway-secrets', 'Gateway secrets', names.secret],
        ['gateway-model-definitions', 'Gateway model definitions', names.definition],
      ] as const) {
        await screen(page, route, heading);
        await page.getByRole('table', { name: heading }).getByRole('link', { name, exact: true }).waitFor();
        expect(await page.content()).not.toContain('sk-ui-never-shown');
      }

      // An endpoint's page: USE is offered, and granted by clicking.
      await screen(page, `gateway-endpoints/${names.endpoint}`, names.endpoint);
      expect(await options(page, 'Permission')).toEqual(['READ', 'USE', 'EDIT', 'MANAGE', 'NO_PERMISSIONS']);
      await page.locator('#fg-grant-name').fill('colin');
      await page.locator('#fg-grant-permission').selectOption('USE');
      await page.getByRole('button', { name: 'Grant', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByText(`Give user “colin” USE on gateway endpoint “${names.endpoint}”?`).waitFor();
      await dialog.getByRole('button', { name: 'Grant' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.getByRole('table', { name: 'Grants' }).getByRole('row', { name: /colin USE/ }).waitFor();
      expect(await call('GET', `/api/2.0/mlflow/permissions/users/colin/gateways/endpoints/${names.endpoint}`)).toMatchObject({ permission: { permission: 'USE' } });
      await expectAccessible(page, 'gateway endpoint page');

      // Explain offers read and use here, as MLflow's own calls.
      expect(await options(page, 'Action')).toEqual(['Read (view it)', 'Use (invoke it, or build on it)']);
      await explainFor(page, 'read', 'colin');
      await page.getByText(`GET ${GW}/endpoints/get`).waitFor();
      await verdict(page).getByText('Allowed: colin may read this gateway endpoint').waitFor();
      await explainFor(page, 'use', 'colin');
      await page.getByText('POST /gateway/mlflow/v1/chat/completions').waitFor();
      await verdict(page).getByText('Allowed: colin may use this gateway endpoint').waitFor();
      // MANAGE includes USE.
      await explainFor(page, 'use', 'maria');
      await verdict(page).getByText('Allowed: maria may use this gateway endpoint').waitFor();
      await expectAccessible(page, 'gateway explain');

      // A secret is got by its generated id, found in MLflow's list; using it is building a model definition on it.
      await screen(page, `gateway-secrets/${names.secret}`, names.secret);
      await explainFor(page, 'read', 'colin');
      await page.getByText(`GET ${GW}/secrets/get`).waitFor();
      await verdict(page).getByText('Denied: colin may not read this gateway secret').waitFor();
      await explainFor(page, 'use', 'colin');
      await page.getByText(`POST ${GW}/model-definitions/create`).waitFor();
      await verdict(page).getByText('Denied: colin may not use this gateway secret').waitFor();
      await page.locator('#fg-explain-rule').getByText('Neither colin nor any of their groups holds a grant here: the default permission does not permit use.').waitFor();
      // A model definition: the same, its use building an endpoint on it; granted USE, colin may.
      await call('POST', `/api/2.0/mlflow/permissions/users/colin/gateways/model-definitions/${names.definition}`, { permission: 'USE' });
      await screen(page, `gateway-model-definitions/${names.definition}`, names.definition);
      await explainFor(page, 'read', 'colin');
      await page.getByText(`GET ${GW}/model-definitions/get`).waitFor();
      await verdict(page).getByText('Allowed: colin may read this gateway model definition').waitFor();
      await explainFor(page, 'use', 'colin');
      await page.getByText(`POST ${GW}/endpoints/create`).waitFor();
      await verdict(page).getByText('Allowed: colin may use this gateway model definition').waitFor();
      await page.locator('#fg-explain-rule').getByText('Anyone signed in may create here, and every further check (below) allowed it.').waitFor();

      // Experiments take no USE: not offered on their page, nor for their pattern grants; the gateway's are.
      await screen(page, 'experiments', 'Experiments');
      // (MLflow makes an experiment `gateway/<name>` for each endpoint: more than a page.)
      await page.getByLabel('Search experiments').fill(names.exp);
      await page.getByRole('link', { name: names.exp }).click();
      await page.getByRole('heading', { level: 1, name: names.exp }).waitFor();
      expect(await options(page, 'Permission')).toEqual(['READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS']);
      expect(await options(page, 'Action')).toEqual(['Read (view it)', 'Edit (change it)', 'Manage (delete it, change who may use it)']);
      await screen(page, 'patterns', 'Pattern grants');
      await page.getByLabel('Kind', { exact: true }).selectOption('gateway_endpoint');
      expect(await options(page, 'Permission')).toContain('USE');
      await page.getByLabel('Permission', { exact: true }).selectOption('USE');
      await page.getByLabel('Kind', { exact: true }).selectOption('experiment');
      expect(await options(page, 'Permission')).not.toContain('USE');
      expect(await page.getByLabel('Permission', { exact: true }).inputValue()).toBe('READ');

      // Team setup creates no gateway kind (their secret values are MLflow's AI Gateway page's).
      await screen(page, 'team-setup', 'Team setup');
      const shared = await options(page, 'Shared resource');
      expect(shared.slice(0, 3)).toEqual(['experiment', 'registered model', 'prompt']);
      for (const gateway of ['gateway secret', 'gateway model definition', 'gateway endpoint']) expect(shared).not.toContain(gateway);
      expect(await options(page, 'Group permission')).not.toContain('USE');
      await page.context().close();
    },
    240_000,
  );

  it(
    'a manager who is not an admin lists the endpoints she manages, and may grant USE on hers',
    async () => {
      const page = await signedIn('maria', tokens.maria!);
      await screen(page, 'gateway-endpoints', 'Gateway endpoints');
      const list = page.getByRole('table', { name: 'Gateway endpoints' });
      await list.getByRole('link', { name: names.endpoint, exact: true }).waitFor();
      expect(await list.getByRole('link').allTextContents()).toEqual([names.endpoint]);
      await list.getByRole('link', { name: names.endpoint, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: names.endpoint }).waitFor();
      expect(await options(page, 'Permission')).toContain('USE');
      await page.context().close();
    },
    120_000,
  );

  it(
    'the Grant button stays disabled until MLflow has said the resource exists (a click before then would do nothing)',
    async () => {
      const page = await signedIn(ADMIN.username, ADMIN.token);
      await screen(page, 'gateway-secrets', 'Gateway secrets');
      const link = page.getByRole('table', { name: 'Gateway secrets' }).getByRole('link', { name: names.secret, exact: true });
      await link.waitFor();
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      let lookups = 0;
      await page.route(/\/gateway\/secrets\//, async (route) => {
        lookups += 1;
        await held;
        await route.continue();
      });
      await link.click();
      await page.locator('#fg-grant-name').fill('maria');
      const grant = page.getByRole('button', { name: 'Grant', exact: true });
      await expect.poll(() => lookups).toBeGreaterThan(0);
      expect(await grant.isDisabled()).toBe(true);
      release();
      await expect.poll(() => grant.isEnabled(), { timeout: 30_000 }).toBe(true);
      await page.context().close();
    },
    120_000,
  );

  it(
    "a secret named like another admin route, planted by a user with no grants: the admin's Grant on its page is a grant on that secret, nothing else",
    async () => {
      const exp = (await call('GET', `/api/2.0/mlflow/experiments/get-by-name?experiment_name=${names.exp}`)).experiment as { experiment_id: string };
      const planted = `../../../../users/colin/experiments/${exp.experiment_id}`;
      const planting = { secret_name: planted, secret_value: { api_key: 'sk-planted' }, provider: 'openai', auth_config: { api_base: 'http://127.0.0.1:9/v1' } };
      await call('POST', `${GW}/secrets/create`, planting, basicOf('colin'));
      const page = await signedIn(ADMIN.username, ADMIN.token);
      await screen(page, 'gateway-secrets', 'Gateway secrets');
      await page.getByRole('table', { name: 'Gateway secrets' }).getByRole('link', { name: planted, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: planted }).waitFor();
      await page.locator('#fg-grant-name').fill('maria');
      await page.locator('#fg-grant-permission').selectOption('MANAGE');
      await page.getByRole('button', { name: 'Grant', exact: true }).click();
      const dialog = page.getByRole('dialog');
      await dialog.getByRole('button', { name: 'Grant' }).click();
      await dialog.waitFor({ state: 'detached' });
      await page.getByRole('table', { name: 'Grants' }).getByRole('row', { name: /maria MANAGE/ }).waitFor();
      expect(await call('GET', `/api/2.0/mlflow/permissions/users/maria/gateways/secrets/${encodeURIComponent(planted)}`)).toMatchObject({ permission: { name: planted, permission: 'MANAGE' } });
      // The route the name spells was not reached: no grant on the experiment, for colin or anyone.
      await expect(call('GET', `/api/2.0/mlflow/permissions/users/colin/experiments/${exp.experiment_id}`)).rejects.toThrow(/→ 404/);
      await page.context().close();
    },
    120_000,
  );
});
