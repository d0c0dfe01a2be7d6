import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import {
  afterSignOut,
  CookieJar,
  flowgateClientAt,
  freePort,
  HTML,
  loginWithFetch,
  send,
  startOidcFlowgate,
  startOidcProvider,
  type OidcFlowgate,
  type TestProvider,
} from '../helpers/oidc-provider.js';

/**
 * Browser sessions against the real MLflow, from the attacker's side (issue 32, classes 5 to 7). Two
 * flowgates share one store (the same SQLite file, or with FLOWGATE_TEST_STORE=postgres the same
 * database). A session is worth exactly what its credential is worth: it ends with the access token
 * that opened it, loses an admin's power with the flag, and ends on every flowgate within 1 s
 * however it was ended. Sign-out changes state only by a same-origin POST: a cross-site GET, HEAD
 * or form post ends nothing.
 */
const V2 = '/api/2.0/mlflow';
const BOUND_MS = 1000;

let mlflow: MlflowServer;
let a: TestFlowgate;
let b: TestFlowgate;
/** An experiment the signed-in users read through a group grant, and one only an administrator reads. */
let shared = '';
let secret = '';

const env = () => ({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_STORE_WATCH_MS: '250', FLOWGATE_SESSION_COOKIE_SECURE: 'false' });
const admin = (fg: TestFlowgate) => ({
  post: (path: string, body: object) => request(fg.url).post(path).set('Authorization', adminAuth()).send(body),
  patch: (path: string, body: object) => request(fg.url).patch(path).set('Authorization', adminAuth()).send(body),
  delete: (path: string) => request(fg.url).delete(path).set('Authorization', adminAuth()),
});
const originOf = (fg: TestFlowgate) => new URL(fg.url).origin;

beforeAll(async () => {
  mlflow = await startMlflowServer();
  a = await startTestFlowgate(env());
  b = await startTestFlowgate(env(), a.dir);
  shared = (await admin(a).post(`${V2}/experiments/create`, { name: 'sessions-shared' }).expect(200)).body.experiment_id;
  secret = (await admin(a).post(`${V2}/experiments/create`, { name: 'sessions-secret' }).expect(200)).body.experiment_id;
  await admin(a).post(`${V2}/permissions/groups`, { group_name: 'readers' }).expect(201);
  await admin(a).post(`${V2}/permissions/groups/readers/experiments/${shared}`, { permission: 'READ' }).expect(201);
}, 300_000);

afterAll(async () => {
  await b?.close();
  await a?.close();
  if (a) removeDir(a.dir);
  await mlflow?.stop();
});

/** A user in group `readers` (READ on `shared`) with an access token, optionally an administrator. */
async function newUser(username: string, opts: { isAdmin?: boolean; expiration?: string } = {}): Promise<string> {
  await admin(a).post(`${V2}/users/create`, { username, is_admin: opts.isAdmin ?? false }).expect(201);
  await admin(a).post(`${V2}/permissions/groups/readers/users`, { username }).expect(201);
  const token = (await admin(a).patch(`${V2}/permissions/users/access-token`, { username, ...(opts.expiration ? { expiration: opts.expiration } : {}) }).expect(200))
    .body.token as string;
  // The membership was written through a; b follows within its watch interval.
  await within(BOUND_MS, [a, b], async (fg) => (await request(fg.url).get(`${V2}/experiments/get`).query({ experiment_id: shared }).set('Authorization', basic(username, token))).status === 200);
  return token;
}

/** Signs in on `fg`'s sign-in page (no OIDC) and returns the session cookie. */
async function signIn(fg: TestFlowgate, username: string, token: string): Promise<{ cookie: string; maxAge: number }> {
  const r = await request(fg.url).post('/flowgate/login').set('Origin', originOf(fg)).type('form').send({ username, token, return_to: '/' });
  expect(r.status, r.text).toBe(302);
  const set = ([] as string[]).concat(r.headers['set-cookie'] ?? []).find((c) => c.startsWith('flowgate_session='))!;
  return { cookie: set.split(';')[0]!, maxAge: Number(/Max-Age=(\d+)/i.exec(set)?.[1]) };
}

type Prefix = '/api' | '/ajax-api';
const PREFIXES: readonly Prefix[] = ['/api', '/ajax-api'];
/** The session used to read an experiment in MLflow through `fg`: the status flowgate answers. */
const read = async (fg: TestFlowgate, cookie: string, prefix: Prefix, experiment = shared) =>
  (await request(fg.url).get(`${prefix}/2.0/mlflow/experiments/get`).query({ experiment_id: experiment }).set('Cookie', cookie)).status;

/**
 * Waits out a few watch intervals, so each flowgate has taken in the user's creation: a poll that sees
 * a policy change drops every cached session, which would hide a session end that never reached it.
 */
const settle = () => new Promise((r) => setTimeout(r, 1000));

/** Polls until `check` holds on every flowgate given, failing after `ms`. */
async function within(ms: number, targets: readonly TestFlowgate[], check: (fg: TestFlowgate) => Promise<boolean>): Promise<void> {
  const started = Date.now();
  const pending = new Set(targets);
  while (pending.size > 0) {
    for (const fg of [...pending]) if (await check(fg)) pending.delete(fg);
    if (pending.size === 0) return;
    if (Date.now() - started > ms) throw new Error(`not on ${pending.size} flowgate(s) within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The session reads `shared` on both flowgates, over both API prefixes. */
async function expectLive(cookie: string): Promise<void> {
  for (const fg of [a, b]) for (const prefix of PREFIXES) expect(await read(fg, cookie, prefix), `${prefix} on ${fg === a ? 'a' : 'b'}`).toBe(200);
}

/** The session is refused (401, no session) on `at` at once and on both flowgates within 1 s, over both prefixes. */
async function expectEnded(cookie: string, at: TestFlowgate): Promise<void> {
  for (const prefix of PREFIXES) expect(await read(at, cookie, prefix), `${prefix} where it was ended`).toBe(401);
  await within(BOUND_MS, [a, b], async (fg) => (await Promise.all(PREFIXES.map((p) => read(fg, cookie, p)))).every((s) => s === 401));
}

describe('class 5: a session is bound to the credential that opened it', () => {
  it('revoking the access token ends every session it opened, on every flowgate', async () => {
    const token = await newUser('s5-revoked');
    const first = await signIn(a, 's5-revoked', token);
    const second = await signIn(b, 's5-revoked', token);
    await expectLive(first.cookie);
    await expectLive(second.cookie);
    await admin(a).delete(`${V2}/permissions/users/s5-revoked/access-token`).expect(200);
    await expectEnded(first.cookie, a);
    await expectEnded(second.cookie, a);
  });

  it('replacing the token (an administrator mints a new one) ends the old one’s session; the new token opens a new one', async () => {
    const old = await newUser('s5-replaced');
    const { cookie } = await signIn(a, 's5-replaced', old);
    await expectLive(cookie);
    const fresh = (await admin(b).patch(`${V2}/permissions/users/access-token`, { username: 's5-replaced' }).expect(200)).body.token as string;
    await expectEnded(cookie, b);
    await expectLive((await signIn(a, 's5-replaced', fresh)).cookie);
  });

  it('replacing the token through the session itself ends that session too: the new key must sign in again', async () => {
    const token = await newUser('s5-self');
    const { cookie } = await signIn(a, 's5-self', token);
    await expectLive(cookie);
    const minted = await request(a.url).patch('/ajax-api/2.0/mlflow/permissions/users/access-token').set('Cookie', cookie).set('Origin', originOf(a)).send({});
    expect(minted.status).toBe(200);
    await expectEnded(cookie, a);
    await expectLive((await signIn(b, 's5-self', minted.body.token as string)).cookie);
  });

  it('revoking a named access key ends the sessions it opened and no other', async () => {
    const unnamed = await newUser('s5-keys');
    const key = (await admin(a).post(`${V2}/permissions/users/s5-keys/access-keys`, { name: 'laptop' }).expect(201)).body.token as string;
    const byKey = await signIn(a, 's5-keys', key);
    const byToken = await signIn(b, 's5-keys', unnamed);
    await expectLive(byKey.cookie);
    await admin(b).delete(`${V2}/permissions/users/s5-keys/access-keys/laptop`).expect(200);
    await expectEnded(byKey.cookie, b);
    await expectLive(byToken.cookie);
  });

  it('a session ends when the token that opened it expires, and its cookie says so', async () => {
    const expiresAt = Math.ceil((Date.now() + 4000) / 1000) * 1000;
    const token = await newUser('s5-expiring', { expiration: new Date(expiresAt).toISOString() });
    const { cookie, maxAge } = await signIn(a, 's5-expiring', token);
    expect(maxAge).toBeLessThanOrEqual(4);
    await expectLive(cookie);
    await new Promise((r) => setTimeout(r, expiresAt - Date.now() + 50));
    for (const fg of [a, b]) for (const prefix of PREFIXES) expect(await read(fg, cookie, prefix)).toBe(401);
  });

  it('demoting an administrator takes the admin power from their session on every flowgate', async () => {
    const token = await newUser('s5-admin', { isAdmin: true });
    const { cookie } = await signIn(a, 's5-admin', token);
    const users = (fg: TestFlowgate, prefix: Prefix) => request(fg.url).get(`${prefix}/2.0/mlflow/permissions/users`).set('Cookie', cookie);
    for (const fg of [a, b])
      for (const prefix of PREFIXES) {
        expect(await read(fg, cookie, prefix, secret)).toBe(200);
        expect((await users(fg, prefix)).status).toBe(200);
      }
    await admin(a).patch(`${V2}/permissions/users/s5-admin`, { is_admin: false }).expect(200);
    const demoted = async (fg: TestFlowgate) => {
      for (const prefix of PREFIXES) if ((await read(fg, cookie, prefix, secret)) !== 403 || (await users(fg, prefix)).status !== 403) return false;
      return true;
    };
    expect(await demoted(a)).toBe(true);
    await within(BOUND_MS, [a, b], demoted);
    // Still signed in, as the user they now are.
    await expectLive(cookie);
  });

  it('deleting the user ends their sessions on every flowgate', async () => {
    const token = await newUser('s5-deleted');
    const { cookie } = await signIn(b, 's5-deleted', token);
    await expectLive(cookie);
    await admin(b).delete(`${V2}/permissions/users/s5-deleted`).expect(200);
    await expectEnded(cookie, b);
  });
});

describe('cookie tossing: a second session cookie of the same name', () => {
  it("never acts as the session a sibling host or a longer path tossed in: two of them are no session (401), each alone still works", async () => {
    const victim = await signIn(a, 's5-victim', await newUser('s5-victim'));
    const attacker = await signIn(a, 's5-tosser', await newUser('s5-tosser'));
    const whoAmI = async (cookie: string) => {
      const r = await request(a.url).get(`${V2}/users/current`).set('Cookie', cookie);
      return r.status === 200 ? (r.body.user?.username as string) : r.status;
    };
    expect(await whoAmI(victim.cookie)).toBe('s5-victim');
    expect(await whoAmI(attacker.cookie)).toBe('s5-tosser');
    // The browser sends the longer-path (tossed) cookie first; a parser keeps the first value.
    expect(await whoAmI(`${attacker.cookie}; theme=dark; ${victim.cookie}`)).toBe(401);
    expect(await whoAmI(`${victim.cookie}; ${attacker.cookie}`)).toBe(401);
    expect(await read(a, `${attacker.cookie}; ${victim.cookie}`, '/ajax-api')).toBe(401);
  });
});

describe('class 6: ending sessions reaches every flowgate on the store', () => {
  it('a sign-out on one flowgate ends the session on the other within 1 s', async () => {
    const { cookie } = await signIn(a, 's6-out', await newUser('s6-out'));
    await settle();
    await expectLive(cookie);
    const out = await request(b.url).post('/flowgate/logout').set('Origin', originOf(b)).set('Cookie', cookie);
    expect(out.status).toBe(302);
    await expectEnded(cookie, b);
  });

  it('an administrator’s end-sessions on one flowgate ends them on the other within 1 s', async () => {
    const token = await newUser('s6-ended');
    const sessions = [await signIn(a, 's6-ended', token), await signIn(b, 's6-ended', token)];
    await settle();
    for (const s of sessions) await expectLive(s.cookie);
    const ended = await admin(a).delete(`${V2}/permissions/users/s6-ended/sessions`).expect(200);
    expect(ended.body).toEqual({ ended: 2 });
    for (const s of sessions) await expectEnded(s.cookie, a);
  });
});

describe('class 7: sign-out changes state only by a same-origin POST', () => {
  it('a GET or HEAD of the sign-out path (a link or image on another site) shows a POST form and ends nothing; other methods are refused', async () => {
    const { cookie } = await signIn(a, 's7-get', await newUser('s7-get'));
    const page = await request(a.url)
      .get('/flowgate/logout')
      .set('Cookie', cookie)
      .set('Accept', HTML)
      .set('Referer', 'https://evil.example/page')
      .set('Sec-Fetch-Site', 'cross-site');
    expect(page.status).toBe(200);
    expect(page.headers['set-cookie']).toBeUndefined();
    expect(page.text).toMatch(/<form method="post" action="\/flowgate\/logout"/);
    expect((await request(a.url).head('/flowgate/logout').set('Cookie', cookie)).status).toBe(200);
    for (const method of ['put', 'delete', 'patch'] as const) {
      const r = await request(a.url)[method]('/flowgate/logout').set('Cookie', cookie).set('Origin', originOf(a));
      expect(r.status, method).toBe(405);
    }
    await expectLive(cookie);
  });

  it('a POST from another site, or with neither Origin nor Referer, is refused and ends nothing; the page’s own form signs out', async () => {
    const { cookie } = await signIn(a, 's7-post', await newUser('s7-post'));
    const post = () => request(a.url).post('/flowgate/logout').set('Cookie', cookie);
    expect((await post().set('Origin', 'https://evil.example')).status).toBe(403);
    expect((await post().set('Referer', 'https://evil.example/x')).status).toBe(403);
    expect((await post()).status).toBe(403);
    await expectLive(cookie);
    const out = await post().set('Origin', originOf(a));
    expect(out.status).toBe(302);
    expect(out.headers.location).toBe('/flowgate/logged-out');
    await expectEnded(cookie, a);
  });
});

describe('class 7 with OIDC: sign-out by POST only, RP-initiated logout still reaches the provider', () => {
  let idp: TestProvider;
  let fg: OidcFlowgate;
  let base = '';

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    idp = await startOidcProvider({
      ...flowgateClientAt(base),
      accounts: [{ username: 'olivia', name: 'Olivia', roles: ['team-a'] }],
    });
    fg = await startOidcFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_OIDC_ISSUER_URL: idp.issuer }, port);
  }, 120_000);
  afterAll(async () => {
    await fg?.close();
    await idp?.close();
    if (fg) removeDir(fg.dir);
  });

  const search = (jar: CookieJar, prefix: Prefix) =>
    send(jar, `${base}${prefix}/2.0/mlflow/experiments/search?max_results=1`, { headers: { accept: 'application/json' } });
  const expectSignedIn = async (jar: CookieJar, status: number) => {
    for (const prefix of PREFIXES) expect((await search(jar, prefix)).status, prefix).toBe(status);
  };

  it('a cross-site GET or POST ends nothing; a same-origin POST ends the session and goes on to the provider', async () => {
    const jar = new CookieJar();
    const login = await loginWithFetch(jar, `${base}/flowgate/login?return_to=%2F`, 'olivia');
    expect(login.final.status).toBe(302);
    await expectSignedIn(jar, 200);

    const page = await send(jar, `${base}/flowgate/logout`, { headers: { accept: HTML, referer: 'https://evil.example/', 'sec-fetch-site': 'cross-site' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<form method="post" action="\/flowgate\/logout"/);
    const forged = await send(jar, `${base}/flowgate/logout`, { method: 'POST', headers: { accept: HTML, origin: 'https://evil.example' } });
    expect(forged.status).toBe(403);
    const bare = await send(jar, `${base}/flowgate/logout`, { method: 'POST', headers: { accept: HTML } });
    expect(bare.status).toBe(403);
    await expectSignedIn(jar, 200);

    const out = await send(jar, `${base}/flowgate/logout`, { method: 'POST', headers: { accept: HTML, origin: base } });
    const provider = await afterSignOut(out, base);
    expect(provider.origin).toBe(new URL(idp.issuer).origin);
    expect(provider.searchParams.get('id_token_hint')).toBeTruthy();
    await expectSignedIn(jar, 401);
  });
});
