import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startStubUpstream } from '../helpers/flowgate.js';
import {
  afterSignOut,
  CLIENT,
  CookieJar,
  flowgateClientAt,
  freePort,
  HTML,
  loginWithFetch,
  providerIdToken,
  send,
  startOidcFlowgate,
  startOidcProvider,
  type OidcFlowgate,
  type TestProvider,
} from '../helpers/oidc-provider.js';

/**
 * The documented set-up with a real OpenID Provider (npm oidc-provider): sign-in through it, and its
 * JWTs accepted as bearer tokens with the sign-in client's id as the audience. Its ID tokens carry
 * that audience and verify with its keys, yet are no credential: the one flowgate itself received at
 * sign-in (kept in the session, then handed to the provider in the sign-out URL as `id_token_hint`,
 * where browser history and the provider's logs see it) and one any client of the provider obtains
 * by an authorization-code sign-in are refused as bearer tokens (401) and create no principal. The
 * session the sign-in opened still mints its user's access token.
 */
const V2 = '/api/2.0/mlflow';

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let idp: TestProvider;
let fg: OidcFlowgate;
let base = '';

beforeAll(async () => {
  upstream = await startStubUpstream();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({
    ...flowgateClientAt(base),
    accounts: [
      { username: 'kate', name: 'Kate', roles: ['team-k'] },
      { username: 'leo', name: 'Leo', roles: ['team-k'] },
    ],
    // Names and groups in the ID token too: nothing but its being an ID token refuses it.
    claimsInIdToken: true,
  });
  fg = await startOidcFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: upstream.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: CLIENT.id }]),
    },
    port,
  );
}, 120_000);

afterAll(async () => {
  await fg?.close();
  await idp?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const userRow = (username: string) => fg.store.sql.get('SELECT id FROM users WHERE username = ?', [username]);
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

async function expectRefusedAsBearer(jwt: string, what: string): Promise<void> {
  const r = await fetch(`${base}${V2}/permissions/users/current`, { headers: { authorization: `Bearer ${jwt}`, accept: 'application/json' } });
  const body = (await r.json()) as { error_code: string; message: string };
  expect(r.status, `${what}: ${JSON.stringify(body)}`).toBe(401);
  expect(body.error_code, what).toBe('UNAUTHENTICATED');
  expect(body.message, what).toMatch(/ID token/);
  expect(r.headers.get('www-authenticate'), what).toBe('Bearer error="invalid_token"');
  expect(upstream.seen.some((s) => s.headers.authorization?.includes(jwt.slice(-40))), `${what}: reached MLflow`).toBe(false);
}

/** An ID token the provider issues to its client for `login` by an authorization-code grant with PKCE and a nonce. */
const idTokenFor = (login: string) => providerIdToken(idp.issuer, `${base}/flowgate/callback`, login, { nonce: true });

describe("the provider's ID tokens are not bearer tokens", () => {
  it('the ID token of flowgate\'s own sign-in (the sign-out URL\'s id_token_hint) is refused; the session still mints an access token', async () => {
    const jar = new CookieJar();
    const run = await loginWithFetch(jar, `${base}/flowgate/login`, 'kate');
    expect(run.final.status).toBe(302);
    const mint = await send(jar, `${base}/ajax-api/2.0/mlflow/permissions/users/access-token`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', origin: base },
      body: '{}',
    });
    expect(mint.status, await mint.clone().text()).toBe(200);
    expect(((await mint.json()) as { token: string }).token).toMatch(/^fgt_/);

    const signOut = await send(jar, `${base}/flowgate/logout`, { method: 'POST', headers: { accept: HTML, origin: base } });
    const hint = (await afterSignOut(signOut, base)).searchParams.get('id_token_hint');
    expect(hint).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    // A token flowgate's bearer issuer would otherwise take: its issuer, the audience it expects, the account of a user.
    expect(claimsOf(hint!)).toMatchObject({ iss: idp.issuer, aud: CLIENT.id, sub: 'kate', nonce: expect.any(String) });
    await expectRefusedAsBearer(hint!, 'id_token_hint');
  });

  it('an ID token obtained from the provider by an authorization-code sign-in is refused, and creates no principal', async () => {
    const idToken = await idTokenFor('leo');
    expect(claimsOf(idToken)).toMatchObject({ iss: idp.issuer, aud: CLIENT.id, sub: 'leo', preferred_username: 'leo', nonce: expect.any(String) });
    await expectRefusedAsBearer(idToken, 'code-flow ID token');
    expect(await userRow('leo')).toBeUndefined();
    await expectRefusedAsBearer(await idTokenFor('kate'), "a signed-in user's ID token");
  });
});
