import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/*
 * A web app on another origin calls MLflow through flowgate from a real browser (Debian's chromium).
 * Its request carries `Authorization`, so the browser sends a CORS preflight first, and the
 * preflight carries no credentials: flowgate must let it reach MLflow, whose own CORS settings
 * (`MLFLOW_SERVER_CORS_ALLOWED_ORIGINS`) decide, or the app can never make the call.
 */

type FetchOutcome = { status: number; names: string[] } | { error: string };

describe('CORS preflights from a browser app on another origin', () => {
  let mlflow: MlflowServer;
  let skipping: TestFlowgate;
  let strict: TestFlowgate;
  let page: Server;
  let pagePort: number;
  let browser: Browser;

  beforeAll(async () => {
    page = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!doctype html><title>team dashboard</title>');
    });
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    pagePort = (page.address() as AddressInfo).port;
    mlflow = await startMlflowServer({ env: { MLFLOW_SERVER_CORS_ALLOWED_ORIGINS: `http://app.example:${pagePort}` } });
    skipping = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_SKIP_AUTH_PREFLIGHT: 'true' });
    strict = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    // Both app origins are names for loopback, so the page is cross-origin to flowgate (127.0.0.1).
    browser = await launchBrowser(['--host-resolver-rules=MAP app.example 127.0.0.1, MAP elsewhere.example 127.0.0.1']);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    for (const fg of [skipping, strict]) {
      await fg?.close();
      if (fg) removeDir(fg.dir);
    }
    await mlflow?.stop();
    await new Promise((r) => page?.close(r));
  });

  async function searchFrom(origin: string, flowgateUrl: string): Promise<FetchOutcome> {
    const context = await browser.newContext();
    try {
      const tab = await context.newPage();
      await tab.goto(`${origin}/`);
      return await tab.evaluate(
        async ({ url, authorization }): Promise<FetchOutcome> => {
          try {
            const r = await fetch(`${url}/api/2.0/mlflow/experiments/search`, {
              method: 'POST',
              headers: { Authorization: authorization, 'Content-Type': 'application/json' },
              body: JSON.stringify({ max_results: 5 }),
            });
            const body = (await r.json()) as { experiments?: Array<{ name: string }> };
            return { status: r.status, names: (body.experiments ?? []).map((e) => e.name) };
          } catch (e) {
            return { error: String(e) };
          }
        },
        { url: flowgateUrl, authorization: basic(ADMIN.username, ADMIN.token) },
      );
    } finally {
      await context.close();
    }
  }

  it('with FLOWGATE_SKIP_AUTH_PREFLIGHT, the app on an origin MLflow allows gets its answer', async () => {
    const outcome = await searchFrom(`http://app.example:${pagePort}`, skipping.url);
    expect(outcome).toEqual({ status: 200, names: expect.arrayContaining(['Default']) });
  });

  it('MLflow, not flowgate, decides which origins: an origin it does not allow is refused', async () => {
    const outcome = await searchFrom(`http://elsewhere.example:${pagePort}`, skipping.url);
    expect(outcome).toEqual({ error: expect.stringContaining('Failed to fetch') });
  });

  it('without the setting (the default) the preflight needs credentials, so the browser gives up', async () => {
    const outcome = await searchFrom(`http://app.example:${pagePort}`, strict.url);
    expect(outcome).toEqual({ error: expect.stringContaining('Failed to fetch') });
    const preflight = await request(strict.url)
      .options('/api/2.0/mlflow/experiments/search')
      .set('Origin', `http://app.example:${pagePort}`)
      .set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(401);
    expect(preflight.body.error_code).toBe('UNAUTHENTICATED');
  });

  it('passes on only preflights of MLflow routes; other OPTIONS requests still need credentials', async () => {
    const origin = `http://app.example:${pagePort}`;
    const preflight = await request(skipping.url)
      .options('/api/2.0/mlflow/experiments/search')
      .set('Origin', origin)
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization,content-type');
    expect(preflight.status).toBe(200);
    expect(preflight.headers['access-control-allow-origin']).toBe(origin);
    expect(preflight.headers['access-control-allow-headers']?.toLowerCase()).toContain('authorization');

    const cases = [
      // Not a preflight: no Access-Control-Request-Method.
      request(skipping.url).options('/api/2.0/mlflow/experiments/search').set('Origin', origin),
      // Announces a method MLflow does not serve there.
      request(skipping.url).options('/api/2.0/mlflow/experiments/search').set('Origin', origin).set('Access-Control-Request-Method', 'DELETE'),
      // flowgate's admin API is not MLflow's to answer.
      request(skipping.url).options('/api/2.0/mlflow/users/create').set('Origin', origin).set('Access-Control-Request-Method', 'POST'),
    ];
    for (const r of cases) {
      const answer = await r;
      expect(answer.status).toBe(401);
      expect(answer.body.error_code).toBe('UNAUTHENTICATED');
    }
  });
});
