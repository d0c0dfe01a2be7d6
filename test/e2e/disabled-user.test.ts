import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import {
  CLIENT,
  CookieJar,
  flowgateClientAt,
  freePort,
  loginWithFetch,
  providerIdToken,
  send,
  startOidcFlowgate,
  startOidcProvider,
  type OidcFlowgate,
  type TestProvider,
} from '../helpers/oidc-provider.js';

/**
 * A disabled user (an administrator's disable, as SCIM `active: false` does) is refused through the
 * real ways in, not only for flowgate's own tokens and sessions: a fresh OIDC sign-in at the real
 * provider (npm oidc-provider) through flowgate's login flow gives no session, and a JWT the same
 * provider signs for the same account gets MLflow's 401 UNAUTHENTICATED. Enabled again, both work.
 * MLflow is the real one, so "works" is MLflow's own answer.
 */
const SESSION = 'flowgate_session';
const V2 = '/api/2.0/mlflow';

let mlflow: MlflowServer;
let idp: TestProvider;
let fg: OidcFlowgate;
let base = '';

beforeAll(async () => {
  mlflow = await startMlflowServer();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({
    ...flowgateClientAt(base),
    accounts: [{ username: 'dana', name: 'Dana Data', roles: ['team-d'] }],
    // The ID token carries the person's name and groups: it is the bearer JWT used below.
    claimsInIdToken: true,
  });
  fg = await startOidcFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      // Everyone reads what no grant names: MLflow's Default experiment shows in a working search.
      FLOWGATE_DEFAULT_PERMISSION: 'READ',
      // The same provider's JWTs are accepted as bearer tokens of the same accounts.
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: CLIENT.id }]),
    },
    port,
  );
}, 300_000);

afterAll(async () => {
  await fg?.close();
  await idp?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

/** A fresh sign-in at the provider through flowgate's /flowgate/login, as a browser would. */
async function signIn(login: string): Promise<{ jar: CookieJar; status: number; page: string }> {
  const jar = new CookieJar();
  const run = await loginWithFetch(jar, `${base}/flowgate/login`, login);
  return { jar, status: run.final.status, page: await run.final.text() };
}

/**
 * A JWT the provider signs for `login`'s account: its ID token from an authorization-code grant with
 * PKCE (a fresh provider session each time, so a new token flowgate has not verified before). No
 * nonce is sent: flowgate refuses a JWT carrying one as a bearer token (a sign-in's ID token,
 * test/e2e/bearer-id-token.test.ts), and this provider issues no JWT access tokens to this client.
 */
const providerJwt = (login: string) => providerIdToken(idp.issuer, `${base}/flowgate/callback`, login);

const withSession = (jar: CookieJar, path: string) => send(jar, base + path, { headers: { accept: 'application/json' } });
const withBearer = (token: string, path: string) => fetch(base + path, { headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
const adminPost = async (path: string) => {
  const r = await fetch(base + path, { method: 'POST', headers: { authorization: adminAuth(), 'content-type': 'application/json' }, body: '{}' });
  expect(r.status, `${path}: ${await r.clone().text()}`).toBe(200);
};
const SEARCH = `${V2}/experiments/search?max_results=10`;
const CURRENT = `${V2}/permissions/users/current`;

async function expectWorks(jar: CookieJar, token: string): Promise<void> {
  const session = await withSession(jar, CURRENT);
  expect(session.status).toBe(200);
  expect(((await session.json()) as { user: { username: string } }).user.username).toBe('dana');
  expect((await withSession(jar, SEARCH)).status).toBe(200);
  const bearer = await withBearer(token, CURRENT);
  expect(bearer.status).toBe(200);
  expect(((await bearer.json()) as { user: { username: string; groups: string[] } }).user).toMatchObject({ username: 'dana', groups: ['team-d'] });
  // MLflow's own answer through flowgate.
  const search = await withBearer(token, SEARCH);
  expect(search.status).toBe(200);
  expect(((await search.json()) as { experiments?: { name: string }[] }).experiments?.map((e) => e.name)).toContain('Default');
}

async function expectUnauthenticated(res: Response, what: string): Promise<string> {
  expect(res.status, what).toBe(401);
  const body = (await res.json()) as { error_code: string; message: string };
  expect(body.error_code, what).toBe('UNAUTHENTICATED');
  expect(typeof body.message, what).toBe('string');
  return body.message;
}

describe('a disabled user through a real OIDC sign-in and a real bearer JWT', () => {
  let earlierJar: CookieJar;
  let earlierToken: string;

  it('before: the sign-in gives a session and the provider’s JWT is accepted, for the same user', async () => {
    const first = await signIn('dana');
    expect(first.status).toBe(302);
    expect(first.jar.get(SESSION)).toBeDefined();
    earlierJar = first.jar;
    earlierToken = await providerJwt('dana');
    await expectWorks(earlierJar, earlierToken);
  });

  it('disabled: a fresh sign-in is refused with a clear page and no session cookie that works', async () => {
    await adminPost(`${V2}/permissions/users/dana/disable`);
    const refused = await signIn('dana');
    expect(refused.status).toBe(403);
    expect(refused.page).toContain('Account disabled');
    expect(refused.jar.get(SESSION)).toBeUndefined();
    // Whatever cookies the attempt left, none is a session.
    await expectUnauthenticated(await withSession(refused.jar, CURRENT), 'after the refused sign-in');
    await expectUnauthenticated(await withSession(refused.jar, SEARCH), 'after the refused sign-in');
    // And the session from before the disable ended with it.
    await expectUnauthenticated(await withSession(earlierJar, CURRENT), 'the earlier session');
  });

  it('disabled: the provider’s JWT, new or already verified, gets 401 UNAUTHENTICATED in MLflow’s shape', async () => {
    const fresh = await providerJwt('dana');
    for (const [what, token] of [
      ['a new JWT', fresh],
      ['the JWT verified before', earlierToken],
    ] as const) {
      const res = await withBearer(token, SEARCH);
      expect(res.headers.get('www-authenticate'), what).toContain('Bearer');
      const message = await expectUnauthenticated(res, what);
      expect(message, what).not.toContain(token.split('.')[2]!);
      await expectUnauthenticated(await withBearer(token, CURRENT), what);
    }
    expect(fg.logs.join('')).not.toContain(fresh.split('.')[2]!);
  });

  it('enabled again: a fresh sign-in and the provider’s JWT both work', async () => {
    await adminPost(`${V2}/permissions/users/dana/enable`);
    const again = await signIn('dana');
    expect(again.status).toBe(302);
    expect(again.jar.get(SESSION)).toBeDefined();
    await expectWorks(again.jar, await providerJwt('dana'));
  });
});
