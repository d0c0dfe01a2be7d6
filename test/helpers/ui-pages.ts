import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { expect } from 'vitest';
import { launchBrowser } from './browser.js';
import { startFlowgateProcess } from './flowgate-process.js';
import { startMlflowServer } from './mlflow-server.js';

const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Signs in on flowgate's own sign-in page (no OIDC), sent there from `<base>/flowgate/ui/#/access-key`. */
export async function signInToManage(page: Page, base: string, basePath: string, username: string, token: string): Promise<void> {
  await page.goto(`${base}/flowgate/ui/#/access-key`);
  await page.waitForURL((u) => u.pathname === `${basePath}/flowgate/login`);
  await page.getByLabel('User name').fill(username);
  await page.getByLabel('Access token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { level: 1, name: 'My access key' }).waitFor();
}

/** axe-core, evaluated in the page (a script tag would be refused by the CSP): no serious or critical violation. */
export async function expectAccessible(page: Page, screen: string): Promise<void> {
  await page.evaluate(`${AXE}\n;0`);
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then(r => r.violations.map(v => ({ id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 3) })))`,
  )) as { id: string; impact: string }[];
  expect(
    violations.filter((v) => v.impact === 'serious' || v.impact === 'critical'),
    `${screen}: ${JSON.stringify(violations)}`,
  ).toEqual([]);
}

export interface UiStack {
  /** flowgate's URL, base path included. */
  readonly url: string;
  readonly browser: Browser;
  stop(): Promise<void>;
}

/** The real MLflow behind a flowgate process under `basePath` (sessions over plain HTTP), and chromium. */
export async function startUiStack(basePath: string): Promise<UiStack> {
  const mlflow = await startMlflowServer();
  const fg = await startFlowgateProcess({
    env: { FLOWGATE_BASE_PATH: basePath, FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false' },
  }).catch(async (e: unknown) => {
    await mlflow.stop();
    throw e;
  });
  const browser = await launchBrowser().catch(async (e: unknown) => {
    await fg.stop();
    await mlflow.stop();
    throw e;
  });
  return {
    url: fg.url,
    browser,
    async stop() {
      await browser.close();
      await fg.stop();
      await mlflow.stop();
    },
  };
}
