import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,*/*;q=0.8';

/**
 * The attacker's view of flowgate's error page: it writes back parts of the request (the path in the
 * refusal's message, the request id), so a crafted link must not get markup or script into it, and
 * the page must never show the credentials the browser sent with the request.
 */
describe('the error page, attacked', () => {
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let fg: TestFlowgate;
  let cookie: string;
  let bobToken: string;

  beforeAll(async () => {
    upstream = await startStubUpstream();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
    const admin = jsonCaller(() => fg.url);
    await admin.withTokens(['bob']);
    bobToken = admin.tokens.bob!;
    const signIn = await request(fg.url).post('/flowgate/login').set('Origin', new URL(fg.url).origin).type('form').send({ username: 'bob', token: bobToken, return_to: '/' });
    expect(signIn.status, signIn.text).toBe(302);
    cookie = ([] as string[]).concat(signIn.headers['set-cookie'] ?? [])[0]!.split(';')[0]!;
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  /** The page's markup carries no element or attribute the attacker wrote, and no script at all. */
  function expectInert(html: string): void {
    // Escaped text has no `<`, so every `<` left opens flowgate's own markup.
    const tags = html.match(/<[^>]*>/g) ?? [];
    expect(tags.filter((t) => /^<\/?(script|img|iframe|svg|object|embed|base|meta http-equiv)/i.test(t))).toEqual([]);
    expect(tags.filter((t) => /\son[a-z]+\s*=/i.test(t) || /javascript:/i.test(t))).toEqual([]);
  }

  it('a path with markup is shown escaped, under a CSP without inline script', async () => {
    const r = await request(fg.url)
      .get('/flowgate/%3Cscript%3Ealert(1)%3C/script%3E%3Cimg%20src=x%20onerror=alert(2)%3E')
      .set('Accept', BROWSER_ACCEPT)
      .set('Cookie', cookie);
    expect(r.status).toBe(403);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;');
    expectInert(r.text);
    expect(r.headers['content-security-policy']).toMatch(/script-src 'self';/);
    expect(r.headers['content-security-policy']).not.toContain('unsafe-inline');
  });

  it('a path that breaks out of an attribute stays text', async () => {
    const r = await request(fg.url).get(`/x"%20onmouseover="alert(1)'%3E`).set('Accept', BROWSER_ACCEPT).set('Authorization', 'Basic Ym9iOndyb25n');
    expect(r.status).toBe(401);
    // The sign-in link carries the path back, percent-encoded inside an escaped attribute.
    expect(r.text).toMatch(/href="\/flowgate\/login\?return_to=[^"<>]*"/);
    expectInert(r.text);
  });

  it('echoes neither the session cookie, the Basic password, nor a token sent in the query', async () => {
    const sessionValue = cookie.split('=')[1]!;
    const withSession = await request(fg.url).get(`/flowgate/nope?token=${bobToken}&access_token=${bobToken}`).set('Accept', BROWSER_ACCEPT).set('Cookie', cookie);
    expect(withSession.status).toBe(403);
    const wrongPassword = 'guessed-password-0123456789abcdef';
    const withBasic = await request(fg.url)
      .get(`/flowgate/nope?token=${bobToken}`)
      .set('Accept', BROWSER_ACCEPT)
      .set('Authorization', `Basic ${Buffer.from(`bob:${wrongPassword}`).toString('base64')}`)
      .set('Cookie', cookie);
    expect(withBasic.status).toBe(401);
    for (const r of [withSession, withBasic]) {
      expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(r.text).not.toContain(sessionValue);
      expect(r.text).not.toContain(bobToken);
      expect(r.text).not.toContain(encodeURIComponent(bobToken));
      expect(r.text).not.toContain(wrongPassword);
      expect(r.headers['set-cookie']).toBeUndefined();
    }
  });

  it('a request id offered with markup is not taken, so it is never written into the page', async () => {
    const r = await request(fg.url).get('/flowgate/nope').set('Accept', BROWSER_ACCEPT).set('Cookie', cookie).set('X-Request-Id', '<b>id</b>');
    expect(r.status).toBe(403);
    expect(r.text).not.toContain('<b>id</b>');
    expect(r.text).toContain(`<code>${r.headers['x-request-id']}</code>`);
  });
});
