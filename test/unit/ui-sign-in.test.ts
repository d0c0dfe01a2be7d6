import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * Sign-in without OIDC (issue 23): user name + access token open the same server-side session an
 * OIDC login opens; cookies HttpOnly, SameSite, Secure when configured; changes riding on the
 * session need this host's Origin or the session's CSRF token; flowgate's pages carry a CSP without
 * inline script.
 */
const cases = [
  { name: 'at the root, Secure cookies', base: '', secure: 'true', cookie: '__Host-flowgate_session' },
  { name: 'under /mlflow, plain http', base: '/mlflow', secure: 'false', cookie: 'flowgate_session' },
] as const;

describe.each(cases)('sign-in page $name', ({ base, secure, cookie }) => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let host = '';
  const tokens: Record<string, string> = {};
  const api = () => request(fg.url);

  beforeAll(async () => {
    upstream = await startStubUpstream();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_BASE_PATH: base, FLOWGATE_SESSION_COOKIE_SECURE: secure });
    host = new URL(fg.url).host;
    for (const [username, sa] of [
      ['lena', false],
      ['bot', true],
    ] as const) {
      await api().post(`${base}/api/2.0/mlflow/users/create`).set('Authorization', adminAuth()).send({ username, is_service_account: sa }).expect(201);
      tokens[username] = (
        await api().patch(`${base}/api/2.0/mlflow/permissions/users/access-token`).set('Authorization', adminAuth()).send({ username })
      ).body.token;
    }
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  const signIn = (fields: Record<string, string>, origin = `http://${host}`) =>
    api().post(`${base}/flowgate/login`).set('Origin', origin).type('form').send(fields);
  const sessionOf = (r: request.Response) => {
    const set = ([] as string[]).concat(r.headers['set-cookie'] ?? []).find((c) => c.startsWith(`${cookie}=`));
    return set?.split(';')[0];
  };

  it('sends a browser that opens MLflow without a session to the sign-in page, and back afterwards', async () => {
    const r = await api().get(`${base}/?x=1`).set('Accept', 'text/html');
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe(`${base}/flowgate/login?return_to=${encodeURIComponent(`${base}/?x=1`)}`);
    const page = await api().get(r.headers.location as string).expect(200);
    expect(page.text).toContain('name="username"');
    expect(page.text).toContain(`value="${base}/?x=1"`);
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)/);
    expect(page.text).toContain(`<script defer src="${base}/flowgate/ui/assets/sign-in.js"></script>`);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['content-security-policy']).not.toContain('unsafe-inline');
  });

  it('opens a session for a valid user name and token: HttpOnly, SameSite=Lax, Secure as configured', async () => {
    const r = await signIn({ username: 'lena', token: tokens.lena!, return_to: `${base}/#/experiments` });
    expect(r.status).toBe(302);
    expect(r.headers.location).toBe(`${base}/#/experiments`);
    const set = ([] as string[]).concat(r.headers['set-cookie'] ?? []).find((c) => c.startsWith(`${cookie}=`))!;
    expect(set).toMatch(/HttpOnly/i);
    expect(set).toMatch(/SameSite=Lax/i);
    expect(/;\s*Secure/i.test(set)).toBe(secure === 'true');
    expect(set).toContain(`Path=${base || '/'}`);
    const me = await api().get(`${base}/ajax-api/2.0/mlflow/users/current`).set('Cookie', sessionOf(r)!).expect(200);
    expect(me.body.user.username).toBe('lena');
  });

  it('refuses a wrong token, a service account, and a sign-in posted from another site', async () => {
    const wrong = await signIn({ username: 'lena', token: 'fgt_wrong' });
    expect(wrong.status).toBe(401);
    expect(sessionOf(wrong)).toBeUndefined();
    expect(wrong.text).toContain('Unknown user name or access token');
    const bot = await signIn({ username: 'bot', token: tokens.bot! });
    expect(bot.status).toBe(403);
    expect(sessionOf(bot)).toBeUndefined();
    const foreign = await signIn({ username: 'lena', token: tokens.lena! }, 'https://evil.example');
    expect(foreign.status).toBe(403);
    expect(sessionOf(foreign)).toBeUndefined();
  });

  it('lets a change ride on the session only from this host or with the session’s CSRF token', async () => {
    const session = sessionOf(await signIn({ username: 'lena', token: tokens.lena! }))!;
    const app = await api().get(`${base}/flowgate/ui/`).set('Cookie', session).expect(200);
    expect(app.headers['content-security-policy']).toContain("script-src 'self'");
    expect(app.text).toContain(`<script defer src="${base}/flowgate/ui/assets/app.js"></script>`);
    const csrf = /name="flowgate-csrf" content="([^"]+)"/.exec(app.text)![1]!;
    const change = () => api().patch(`${base}/ajax-api/2.0/mlflow/permissions/users/access-token`).set('Cookie', session).send({});
    expect((await change().set('Origin', 'https://evil.example').set('X-Flowgate-CSRF', csrf)).status).toBe(403);
    expect((await change()).status).toBe(403);
    expect((await change().set('X-Flowgate-CSRF', 'not-the-token')).status).toBe(403);
    const first = await change().set('X-Flowgate-CSRF', csrf);
    expect(first.status).toBe(200);
    // Minting replaced the token she signed in with, which ends the session it opened: she signs in with the new one.
    expect((await change().set('Origin', `http://${host}`)).status).toBe(401);
    const again = sessionOf(await signIn({ username: 'lena', token: first.body.token as string }))!;
    const minted = await api().patch(`${base}/ajax-api/2.0/mlflow/permissions/users/access-token`).set('Cookie', again).set('Origin', `http://${host}`).send({});
    expect(minted.status).toBe(200);
    tokens.lena = minted.body.token as string;
  });

  it('signs out: the session ends at once', async () => {
    const session = sessionOf(await signIn({ username: 'lena', token: tokens.lena! }))!;
    const out = await api().post(`${base}/flowgate/logout`).set('Cookie', session).set('Origin', `http://${host}`);
    expect(out.status).toBe(302);
    expect(out.headers.location).toBe(`${base}/flowgate/logged-out`);
    const after = await api().get(`${base}/ajax-api/2.0/mlflow/users/current`).set('Cookie', session).set('Sec-Fetch-Site', 'same-origin');
    expect(after.status).toBe(401);
    expect(after.headers['www-authenticate']).toBeUndefined();
  });
});
