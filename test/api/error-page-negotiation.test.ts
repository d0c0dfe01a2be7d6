import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UI_CSP } from '../../src/ui/headers.js';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { freePort } from '../helpers/mlflow-server.js';

/** What Chromium sends when the address bar loads a page. */
const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';

/**
 * flowgate's refusals answer a browser loading a page with a page, and every other caller (MLflow's
 * client, the UI's own calls, anything on MLflow's API paths) with MLflow's error JSON, as before.
 */
describe('error answers: a page for a browser, JSON for everyone else', () => {
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let fg: TestFlowgate;
  let cookie: string;

  beforeAll(async () => {
    upstream = await startStubUpstream();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
    const admin = jsonCaller(() => fg.url);
    await admin.withTokens(['bob']);
    const signIn = await request(fg.url)
      .post('/flowgate/login')
      .set('Origin', new URL(fg.url).origin)
      .type('form')
      .send({ username: 'bob', token: admin.tokens.bob, return_to: '/' });
    expect(signIn.status, signIn.text).toBe(302);
    cookie = ([] as string[]).concat(signIn.headers['set-cookie'] ?? []).find((c) => c.startsWith('__Host-flowgate_session=') || c.startsWith('flowgate_session='))!.split(';')[0]!;
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  const page = (path: string) => request(fg.url).get(path).set('Accept', BROWSER_ACCEPT).set('Cookie', cookie);

  it('a browser loading an unknown flowgate page gets a page with the refusal, under the UI CSP', async () => {
    const r = await page('/flowgate/no-such-page').set('Sec-Fetch-Mode', 'navigate');
    expect(r.status).toBe(403);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.headers['content-security-policy']).toBe(UI_CSP);
    expect(r.headers['x-frame-options']).toBe('DENY');
    expect(r.headers['cache-control']).toBe('no-store');
    expect(r.text).toContain('<title>Access denied · MLflow</title>');
    expect(r.text).toContain('GET /flowgate/no-such-page is not an MLflow route flowgate knows');
    expect(r.text).toContain('<code>PERMISSION_DENIED</code>');
    expect(r.text).toContain(`<code>${r.headers['x-request-id']}</code>`);
  });

  it('the same request from a script, or not accepting HTML, gets the JSON', async () => {
    const expected = { error_code: 'PERMISSION_DENIED', message: expect.stringContaining('/flowgate/no-such-page') };
    for (const r of [
      await page('/flowgate/no-such-page').set('X-Requested-With', 'XMLHttpRequest'),
      await page('/flowgate/no-such-page').set('Sec-Fetch-Mode', 'cors'),
      await request(fg.url).get('/flowgate/no-such-page').set('Accept', '*/*').set('Cookie', cookie),
      await request(fg.url).get('/flowgate/no-such-page').set('Accept', 'application/json').set('Cookie', cookie),
    ]) {
      expect(r.status).toBe(403);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.body).toEqual(expected);
    }
  });

  it("MLflow's API paths keep the JSON answer even for a browser loading them", async () => {
    for (const path of ['/api/2.0/mlflow/experiments/get?experiment_id=1', '/ajax-api/2.0/mlflow/experiments/get?experiment_id=1', '/api/2.0/mlflow/permissions/users/list']) {
      const r = await page(path).set('Sec-Fetch-Mode', 'navigate');
      expect(r.status, path).toBe(403);
      expect(r.headers['content-type'], path).toBe('application/json');
      expect(r.body.error_code, path).toBe('PERMISSION_DENIED');
    }
    const wrong = await request(fg.url).get('/api/2.0/mlflow/experiments/get?experiment_id=1').set('Accept', BROWSER_ACCEPT).set('Authorization', 'Basic Ym9iOndyb25n');
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toBe('Basic realm="mlflow"');
    expect(wrong.body.error_code).toBe('UNAUTHENTICATED');
  });

  it('a wrong credential on a page is a sign-in page link without the Basic challenge (no password dialog)', async () => {
    const r = await request(fg.url).get('/experiments/x').set('Accept', BROWSER_ACCEPT).set('Authorization', 'Basic Ym9iOndyb25n');
    expect(r.status).toBe(401);
    expect(r.headers['www-authenticate']).toBeUndefined();
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.text).toContain('href="/flowgate/login?return_to=%2Fexperiments%2Fx"');
    const program = await request(fg.url).get('/experiments/x').set('Authorization', 'Basic Ym9iOndyb25n');
    expect(program.status).toBe(401);
    expect(program.headers['www-authenticate']).toBe('Basic realm="mlflow"');
    expect(program.body.error_code).toBe('UNAUTHENTICATED');
  });

  it('a path that cannot be read is a page too, and HEAD gets the headers only', async () => {
    const bad = await request(fg.url).get('/%zz').set('Accept', BROWSER_ACCEPT);
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('malformed percent-encoding');
    const head = await request(fg.url).head('/flowgate/no-such-page').set('Accept', BROWSER_ACCEPT).set('Cookie', cookie);
    expect(head.status).toBe(403);
    expect(head.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(head.text ?? '').toBe('');
  });

  it("the MLflow shell at / answers a browser with a page when MLflow does not answer", async () => {
    const lonely = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: `http://127.0.0.1:${await freePort()}` });
    try {
      const r = await request(lonely.url).get('/').set('Accept', BROWSER_ACCEPT).set('Cookie', await signedIn(lonely));
      expect(r.status).toBe(503);
      expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(r.text).toContain('<code>TEMPORARILY_UNAVAILABLE</code>');
    } finally {
      await lonely.close();
      removeDir(lonely.dir);
    }
  });
});

/** A session cookie of the bootstrap admin on `fg`'s own sign-in page. */
async function signedIn(fg: TestFlowgate): Promise<string> {
  const r = await request(fg.url).post('/flowgate/login').set('Origin', new URL(fg.url).origin).type('form').send({ username: ADMIN.username, token: ADMIN.token, return_to: '/' });
  expect(r.status, r.text).toBe(302);
  return ([] as string[]).concat(r.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
}
