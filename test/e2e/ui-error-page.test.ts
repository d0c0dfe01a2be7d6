import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { launchBrowser } from '../helpers/browser.js';
import { removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

const BASE_PATH = '/mlflow';
const SCREENSHOTS = process.env.FLOWGATE_UI_SCREENSHOTS === '1';

/**
 * flowgate's refusal as Chromium shows it: a page in the sign-in page's look (its stylesheet loads
 * under the CSP, nothing is blocked), while MLflow's API paths stay JSON even in the address bar.
 * With FLOWGATE_UI_SCREENSHOTS=1 it also writes docs/ui/error-page.png.
 */
describe('the error page in a browser', () => {
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let fg: TestFlowgate;
  let browser: Browser;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    upstream = await startStubUpstream();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_BASE_PATH: BASE_PATH, FLOWGATE_SESSION_COOKIE_SECURE: 'false' });
    const admin = jsonCaller(() => fg.url + BASE_PATH);
    await admin.withTokens(['bob']);
    browser = await launchBrowser();
    const context = await browser.newContext({ viewport: { width: 1000, height: 640 } });
    page = await context.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('requestfailed', (r) => problems.push(`${r.url()}: ${r.failure()?.errorText}`));
    await page.goto(`${fg.url}${BASE_PATH}/flowgate/login`);
    await page.getByLabel('User name').fill('bob');
    await page.getByLabel('Access token').fill(admin.tokens.bob!);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL((u) => !u.pathname.endsWith('/flowgate/login'));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.close();
    await upstream?.close();
    if (fg) removeDir(fg.dir);
  });

  it('shows a refused page as a page with the message, styled, nothing blocked', async () => {
    problems.length = 0;
    const answer = await page.goto(`${fg.url}${BASE_PATH}/flowgate/no-such-page`);
    expect(answer!.status()).toBe(403);
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Access denied');
    expect(await page.getByRole('alert').textContent()).toBe(`Permission denied: GET /flowgate/no-such-page is not an MLflow route flowgate knows`);
    // The card style comes from the UI's stylesheet: it loaded under the page's CSP.
    expect(await page.locator('main').evaluate((m) => (m.ownerDocument.defaultView as unknown as { getComputedStyle(e: unknown): { borderRadius: string } }).getComputedStyle(m).borderRadius)).toBe('8px');
    const home = page.getByRole('link', { name: 'Go to MLflow' });
    expect(await home.getAttribute('href')).toBe(`${BASE_PATH}/`);
    expect(problems.filter((p) => !/status of 403/.test(p))).toEqual([]);
    if (SCREENSHOTS) await page.screenshot({ path: 'docs/ui/error-page.png' });
  });

  it('keeps JSON for an API path opened in the address bar', async () => {
    const answer = await page.goto(`${fg.url}${BASE_PATH}/api/2.0/mlflow/experiments/get?experiment_id=1`);
    expect(answer!.status()).toBe(403);
    expect(answer!.headers()['content-type']).toBe('application/json');
    expect(JSON.parse((await answer!.text()) || '{}')).toMatchObject({ error_code: 'PERMISSION_DENIED' });
  });
});
