import type { Browser, Locator, Page, Response } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN } from '../helpers/flowgate.js';
import { endpointsOnProvider, GENAI_MLFLOW_ENV, logTraces, startFakeProvider } from '../helpers/genai.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { compactStacks, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { signInToManage } from '../helpers/ui-pages.js';

/**
 * Issue 35, shown in Debian's chromium on MLflow's own pages (not the Manage screens) behind flowgate,
 * as a non-administrator: the AI Gateway page lists only the endpoints she may read; the experiment's
 * Playground and the endpoint page's "Try in Browser" answer through the endpoint she may use, by way
 * of a fake OpenAI-compatible provider on loopback, and the Playground shows flowgate's refusal for the
 * endpoint she may only read; a judge run from the Judges tab shows its verdict, its job polled as
 * hers. Everything is set up as the administrator through the REST API; she only clicks.
 *
 * At the root, not under a base path: MLflow's "Try in Browser" posts to `window.location.origin +
 * /gateway/…`, leaving any path prefix out (MLflow's, not flowgate's).
 */
const HELLO = 'Hello from the fake provider.';
const VERDICT_RATIONALE = 'It thanks the reader kindly.';
// MLflow's UI bundle is large; under load its first render is slow (see ui-permissions.test.ts).
const UI_LOAD_MS = 90_000;
// A judge's job runs in a fresh Python process that imports MLflow's GenAI modules: slow on a busy machine.
const JOB_MS = 240_000;
// Shorter than flowgate's default, so that a silent invoke leaves time for a second within JOB_MS.
const UPSTREAM_TIMEOUT_MS = 60_000;

describe('MLflow’s own GenAI pages behind flowgate, as a non-administrator', () => {
  let provider: Awaited<ReturnType<typeof startFakeProvider>>;
  let mlflow: MlflowServer;
  let fg: FlowgateProcess;
  let browser: Browser;
  let base = '';
  let experimentId = '';
  const suffix = Date.now().toString(36);
  const names = { usable: `chat-${suffix}`, readable: `peek-${suffix}`, hidden: `hidden-${suffix}`, exp: `genai-ui-${suffix}`, judge: `polite-${suffix}` };
  const { call, tokens, withTokens } = jsonCaller(() => base);
  const pages: Record<string, Page> = {};

  beforeAll(async () => {
    // The judge's prompt carries its instructions ("polite"); anything else is a chat.
    provider = await startFakeProvider((body) => (body.includes('polite') ? JSON.stringify({ result: true, rationale: VERDICT_RATIONALE }) : HELLO));
    mlflow = await startMlflowServer({
      env: GENAI_MLFLOW_ENV,
      startTimeoutMs: 120_000,
      stackDumps: true,
    });
    fg = await startFlowgateProcess({
      env: { FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SESSION_COOKIE_SECURE: 'false', FLOWGATE_UPSTREAM_TIMEOUT_MS: String(UPSTREAM_TIMEOUT_MS) },
    });
    base = fg.url;
    browser = await launchBrowser();
    await withTokens(['nina']);

    await endpointsOnProvider(call, provider.url, suffix, [names.usable, names.readable, names.hidden]);
    await call('POST', `/api/2.0/mlflow/permissions/users/nina/gateways/endpoints/${names.usable}`, { permission: 'USE' });
    await call('POST', `/api/2.0/mlflow/permissions/users/nina/gateways/endpoints/${names.readable}`, { permission: 'READ' });

    experimentId = (await call('POST', '/api/2.0/mlflow/experiments/create', { name: names.exp })).experiment_id as string;
    await call('POST', `/api/2.0/mlflow/permissions/users/nina/experiments/${experimentId}`, { permission: 'EDIT' });
    await logTraces(mlflow.venv, base, ADMIN.username, ADMIN.token, experimentId);
  }, 300_000);

  afterAll(async () => {
    await browser?.close();
    await fg?.stop();
    await mlflow?.stop();
    await provider?.close();
  });

  /** One signed-in page per person, kept across the tests (MLflow's UI is slow to load). */
  async function pageOf(username: string): Promise<Page> {
    if (pages[username]) return pages[username];
    const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
    await signInToManage(page, base, '', username, username === ADMIN.username ? ADMIN.token : tokens[username]!);
    pages[username] = page;
    return page;
  }

  /** Opens an MLflow page by its hash route; MLflow greets a fresh browser with dialogs, closed by Escape. */
  async function mlflowPage(page: Page, hash: string, ready: (page: Page) => Promise<void>): Promise<void> {
    await page.goto(`${base}/#/${hash}`);
    await ready(page);
    await page.keyboard.press('Escape');
  }

  /** The calls the page makes to `pathPart`, with flowgate's status and (JSON) answer. */
  type Recorded = Array<{ method: string; path: string; status: number; body: unknown }>;
  function record(page: Page, pathPart: string): Recorded {
    const seen: Recorded = [];
    page.on('response', (r: Response) => {
      const url = new URL(r.url());
      if (!url.pathname.includes(pathPart)) return;
      const entry = { method: r.request().method(), path: url.pathname, status: r.status(), body: undefined as unknown };
      seen.push(entry);
      r.json().then(
        (body: unknown) => (entry.body = body),
        () => undefined,
      );
    });
    return seen;
  }

  // An endpoint's row links to its page by id (`e-…`); the quick-start cards link to `endpoints/create`.
  const endpointLinks = (page: Page) => page.locator('a[href*="/gateway/endpoints/e-"]');
  const chats = () => provider.seen.filter((r) => r.url.endsWith('/chat/completions'));

  it(
    'the AI Gateway page lists only the endpoints she may read',
    async () => {
      const admin = await pageOf(ADMIN.username);
      await mlflowPage(admin, 'gateway', (p) => endpointLinks(p).filter({ hasText: names.hidden }).waitFor({ timeout: UI_LOAD_MS }));
      // MLflow's page may render its list a part at a time: read until it holds all three.
      await expect.poll(async () => (await endpointLinks(admin).allTextContents()).sort()).toEqual([names.hidden, names.readable, names.usable].sort());
      await admin.context().close();
      delete pages[ADMIN.username];

      const nina = await pageOf('nina');
      const listed = record(nina, '/gateway/endpoints/list');
      await mlflowPage(nina, 'gateway', (p) => endpointLinks(p).filter({ hasText: names.usable }).waitFor({ timeout: UI_LOAD_MS }));
      await endpointLinks(nina).filter({ hasText: names.readable }).waitFor();
      expect((await endpointLinks(nina).allTextContents()).sort()).toEqual([names.readable, names.usable].sort());
      expect(listed.map((r) => r.status)).toContain(200);
      expect(listed.every((r) => r.status === 200)).toBe(true);
    },
    180_000,
  );

  it(
    'the Playground answers through the endpoint she may use, through the fake provider, and shows the refusal for the one she may only read',
    async () => {
      const page = await pageOf('nina');
      const invoked = record(page, '/gateway/mlflow/v1/chat/completions');
      const selector = page.locator('[id="mlflow.playground.endpoint-selector.select"]');
      const message = page.locator('[data-component-id="mlflow.playground.prompt_input.content"]');
      const submit = page.locator('[data-component-id="mlflow.playground.submit"]');
      await mlflowPage(page, `experiments/${experimentId}/playground`, (p) => p.locator('[id="mlflow.playground.endpoint-selector.select"]').waitFor({ timeout: UI_LOAD_MS }));
      await selector.click();
      // Offered what she may read, nothing else (the menu's options render as it opens: read once they are there).
      await page.getByRole('option', { name: names.usable, exact: true }).waitFor();
      await expect.poll(async () => (await page.getByRole('option').allTextContents()).sort()).toEqual([names.readable, names.usable].sort());
      await page.getByRole('option', { name: names.readable, exact: true }).click();
      await message.fill('Say hello.');
      const before = chats().length;
      await submit.click();
      const refusal = page.locator('[data-component-id="mlflow.playground.output.error"]');
      await refusal.getByText(`HTTP 403 — Permission denied: nina may not use the gateway endpoint it names`).waitFor({ timeout: 30_000 });
      expect(chats().length).toBe(before);

      await selector.click();
      await page.getByRole('option', { name: names.usable, exact: true }).click();
      await submit.click();
      // The first call through MLflow's gateway warms up its provider code: allow it time.
      await page.getByText(HELLO, { exact: true }).waitFor({ timeout: 60_000 });
      expect(await refusal.count()).toBe(0);
      expect(invoked.map((r) => [r.method, r.path, r.status])).toEqual([
        ['POST', '/gateway/mlflow/v1/chat/completions', 403],
        ['POST', '/gateway/mlflow/v1/chat/completions', 200],
      ]);
      const reached = chats().slice(before);
      expect(reached).toHaveLength(1);
      expect(JSON.parse(reached[0]!.body)).toMatchObject({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'Say hello.' }] });
    },
    180_000,
  );

  it(
    '“Try in Browser” on her endpoint’s page answers through the fake provider',
    async () => {
      const page = await pageOf('nina');
      await mlflowPage(page, 'gateway', (p) => endpointLinks(p).filter({ hasText: names.usable }).waitFor({ timeout: UI_LOAD_MS }));
      await endpointLinks(page).filter({ hasText: names.usable }).click();
      await page.getByRole('button', { name: 'Try in Browser' }).click();
      const dialog = page.getByRole('dialog', { name: 'Query endpoint' });
      const before = chats().length;
      await dialog.getByRole('button', { name: 'Send request' }).click();
      const response = dialog.locator('textarea[data-component-id="mlflow.gateway.usage-modal.try-it.response"]');
      await expect.poll(() => response.inputValue(), { timeout: 60_000 }).toContain(HELLO);
      expect(chats().length).toBe(before + 1);
      await page.keyboard.press('Escape');
    },
    180_000,
  );

  it(
    'a judge run from the Judges tab, on her endpoint, shows its verdict on each trace; its job is polled as hers',
    async () => {
      const page = await pageOf('nina');
      const started = record(page, '/scorer/invoke');
      const polled = record(page, '/ajax-api/3.0/jobs/');
      await mlflowPage(page, `experiments/${experimentId}/judges`, (p) => p.getByRole('button', { name: 'New LLM judge' }).waitFor({ timeout: UI_LOAD_MS }));
      await page.getByRole('button', { name: 'New LLM judge' }).click();
      const form = page.getByRole('dialog', { name: 'Create LLM judge' });
      await form.locator('[data-component-id="mlflow.experiment-scorers.name-input"]').fill(names.judge);
      await form.getByRole('button', { name: 'Evaluation criteria' }).click();
      await form.locator('textarea').first().fill('Is {{ outputs }} polite? Answer yes or no.');
      await form.locator('[id="mlflow.experiment-scorers.endpoint.select"]').click();
      await page.getByRole('option', { name: names.usable, exact: true }).click();

      await form.getByRole('button', { name: 'Select traces' }).click();
      const picker = page.getByRole('dialog', { name: 'Select traces' });
      await picker.getByRole('checkbox', { name: 'Select all' }).click();
      await picker.getByRole('button', { name: 'Select (2)' }).click();
      await form.getByRole('button', { name: 'Run judge' }).click();

      // The sample output: the judge's verdict and rationale on each trace, as the fake provider gave them.
      await verdictOrWhyNot(form.getByText(VERDICT_RATIONALE).first(), form, started, polled);
      const invokes = started.filter((r) => r.status === 200);
      for (const [question, index] of [['second', 1], ['first', 2]] as const) {
        if (index > 1) await form.getByRole('button', { name: 'Next' }).click();
        await form.getByText(`Trace ${index} of 2`).waitFor();
        await form.getByText(question, { exact: true }).waitFor();
        await form.getByText('True', { exact: true }).first().waitFor();
        await form.getByText(VERDICT_RATIONALE).first().waitFor();
      }
      expect(invokes.map((r) => [r.method, r.status])).toEqual([['POST', 200]]);
      const jobId = (invokes[0]!.body as { jobs: Array<{ job_id: string }> }).jobs[0]!.job_id;
      expect(polled.length).toBeGreaterThan(0);
      for (const poll of polled) expect([poll.path, poll.status]).toEqual([`/ajax-api/3.0/jobs/${jobId}`, 200]);
      await expect.poll(() => (polled.at(-1)?.body as { status?: string } | undefined)?.status).toBe('SUCCEEDED');
      expect(chats().some((r) => r.body.includes('polite'))).toBe(true);

      // Kept as a judge of the experiment: registered by her, listed on the tab.
      await form.getByRole('button', { name: 'Create judge' }).click();
      await form.waitFor({ state: 'detached' });
      await page.getByText(names.judge, { exact: true }).waitFor();
      const listed = (await call('GET', `/api/3.0/mlflow/scorers/list?experiment_id=${experimentId}`)).scorers as Array<{ scorer_name: string }>;
      expect(listed.map((s) => s.scorer_name)).toContain(names.judge);
    },
    JOB_MS + 60_000,
  );

  /**
   * Waits for the judge's verdict; when it does not come, fails saying what the page, the job's polls and
   * MLflow (each of its threads' stacks) showed, so that a run which fails on a loaded machine tells a slow
   * job from a failed one. An invoke MLflow leaves unanswered for the whole upstream timeout (504) puts
   * MLflow's stacks in the log and she clicks "Run judge" again, as a person would after the error the
   * dialog shows; a second silent invoke fails the test.
   */
  async function verdictOrWhyNot(verdict: Locator, form: Locator, started: Recorded, polled: Recorded): Promise<void> {
    const deadline = Date.now() + JOB_MS;
    let retried = false;
    while (!(await verdict.isVisible())) {
      const last = polled.at(-1)?.body as { status?: string; result?: unknown } | undefined;
      const ended = last?.status === 'FAILED' || last?.status === 'TIMEOUT' || last?.status === 'CANCELED';
      const silent = started.filter((r) => r.status === 504).length;
      if (silent === 1 && !retried && started.length === 1) {
        retried = true;
        const stacks = await mlflow.dumpStacks();
        console.warn(`the judge's invoke got 504 (MLflow silent for ${UPSTREAM_TIMEOUT_MS} ms); the threads of MLflow's worker then:\n${compactStacks(stacks, 'uvicorn')}\nMLflow's log ends:\n${mlflow.logs().slice(-4_000)}`);
        await form.getByRole('button', { name: 'Run judge' }).click();
        continue;
      }
      if (ended || silent > 1 || Date.now() > deadline) {
        const shown = (await form.innerText().catch(() => '')).slice(0, 800);
        const stacks = await mlflow.dumpStacks();
        throw new Error(
          `no verdict after ${Math.round((Date.now() - deadline + JOB_MS) / 1000)} s; ` +
            `invoke: ${JSON.stringify(started.map((r) => [r.status, r.body]))}; ` +
            `${polled.length} polls, statuses ${JSON.stringify(polled.map((r) => r.status))}, the last: ${JSON.stringify(last ?? null).slice(0, 400)}; ` +
            `the dialog shows: ${JSON.stringify(shown)}; MLflow's log ends: ${JSON.stringify(mlflow.logs().slice(-1_500))}\n` +
            `the threads of MLflow's worker, innermost frame first:\n${compactStacks(stacks, 'uvicorn')}`,
        );
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
});
