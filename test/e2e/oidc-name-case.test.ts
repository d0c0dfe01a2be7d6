import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir } from '../helpers/flowgate.js';
import { newKey, signWith, type IssuerKey } from '../helpers/jwt-issuers.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import {
  CookieJar,
  flowgateClientAt,
  freePort,
  loginWithFetch,
  send,
  startOidcFlowgate,
  startOidcProvider,
  type OidcFlowgate,
  type TestProvider,
} from '../helpers/oidc-provider.js';
import { USER_SCHEMA, scimCalls } from '../helpers/scim.js';

/**
 * `alice` and `Alice` are one person, not two accounts. The identity provider pushes `alice` by SCIM
 * (awaiting her first sign-in) and its ID token says `preferred_username: Alice`: the real sign-in
 * (npm oidc-provider, through flowgate's login flow) binds the `alice` SCIM made instead of creating
 * a second user `Alice`, so the access key she mints, her session and bearer JWTs of her account are
 * all `alice`'s, and SCIM's de-provisioning of `alice` ends every one of them. A name held in another
 * case by anyone SCIM did not make is refused: no second account either way. The bearer JWTs carry
 * the provider's `iss` (the sign-in issuer, which may bind a person awaiting a first sign-in) and are
 * signed with a key flowgate reads from a file: the provider's own tokens are ID tokens (no bearer
 * credential) or opaque. MLflow is the real one, so "reads" is MLflow's own answer.
 */
const V2 = '/api/2.0/mlflow';
const SESSION = 'flowgate_session';
const SCIM_TOKEN = 'scim-name-case-token-0123456789abcdef012345';
const AUDIENCE = 'flowgate-api';

let mlflow: MlflowServer;
let idp: TestProvider;
let fg: OidcFlowgate;
let base = '';
let experimentId = '';
let key: IssuerKey;

beforeAll(async () => {
  mlflow = await startMlflowServer();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({
    ...flowgateClientAt(base),
    accounts: [
      { username: 'idp-alice', preferredUsername: 'Alice', name: 'Alice A', roles: ['team-a'] },
      { username: 'idp-carol', preferredUsername: 'CAROL', name: 'Carol C', roles: [] },
      { username: 'idp-dave', preferredUsername: 'Dave', name: 'Dave D', roles: [] },
    ],
  });
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-name-case-'));
  writeFileSync(join(dir, 'scim-token'), SCIM_TOKEN);
  key = await newKey('name-case-key');
  writeFileSync(join(dir, 'jwks.json'), JSON.stringify({ keys: [key.publicJwk] }));
  fg = await startOidcFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ issuer: idp.issuer, audience: AUDIENCE, jwks_file: join(dir, 'jwks.json') }]),
      FLOWGATE_SCIM_TOKEN_FILE: join(dir, 'scim-token'),
      FLOWGATE_SCIM_BURST: '1000',
      FLOWGATE_SCIM_RATE_PER_SECOND: '1000',
    },
    port,
    dir,
  );
  const made = await fetch(`${base}${V2}/experiments/create`, {
    method: 'POST',
    headers: { authorization: adminAuth(), 'content-type': 'application/json' },
    body: JSON.stringify({ name: `name-case-${randomBytes(3).toString('hex')}` }),
  });
  expect(made.status).toBe(200);
  experimentId = ((await made.json()) as { experiment_id: string }).experiment_id;
}, 300_000);

afterAll(async () => {
  await fg?.close();
  await idp?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

const scim = () => scimCalls(base, SCIM_TOKEN);
const adminCall = (method: string, path: string, body?: object) =>
  fetch(base + path, { method, headers: { authorization: adminAuth(), 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });

async function signIn(login: string): Promise<{ jar: CookieJar; status: number; page: string }> {
  const jar = new CookieJar();
  const run = await loginWithFetch(jar, `${base}/flowgate/login`, login);
  return { jar, status: run.final.status, page: await run.final.text() };
}

/** A bearer JWT of the sign-in issuer for the provider's account `sub`, named `name`. */
function jwtOf(sub: string, name: string, groups: string[] = []): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return signWith(key, { iss: idp.issuer, aud: AUDIENCE, sub, preferred_username: name, name, groups, iat: now, exp: now + 600, jti: randomBytes(8).toString('hex') });
}

const READ = () => `${V2}/experiments/get?experiment_id=${experimentId}`;
const CURRENT = `${V2}/permissions/users/current`;
const withSession = (jar: CookieJar, path: string) => send(jar, base + path, { headers: { accept: 'application/json' } });
const withHeader = (authorization: string, path: string) => fetch(base + path, { headers: { authorization, accept: 'application/json' } });
/** Every user whose name is `name` in any case. */
const namesLike = async (name: string) =>
  (await fg.store.sql.all<{ username: string }>('SELECT username FROM users WHERE lower(username) = lower(?) ORDER BY username', [name])).map((r) => r.username);
const scimUser = async (userName: string) => {
  const r = await scim().post('/Users', { schemas: [USER_SCHEMA], userName, externalId: `ext-${userName}` });
  expect(r.status, r.text).toBe(201);
  return r.body.id as string;
};

describe('SCIM made `alice`; the provider says `Alice`', () => {
  let aliceId = '';
  let jar: CookieJar;
  let key = '';
  let jwt = '';

  it('her first sign-in binds the `alice` SCIM made (no second account); she reads what `alice` was granted, through MLflow', async () => {
    aliceId = await scimUser('alice');
    expect((await adminCall('POST', `${V2}/permissions/users/alice/experiments/${experimentId}`, { permission: 'READ' })).status).toBe(201);

    const first = await signIn('idp-alice');
    expect(first.status, first.page).toBe(302);
    jar = first.jar;
    expect(jar.get(SESSION)).toBeDefined();
    const me = await withSession(jar, CURRENT);
    expect(me.status).toBe(200);
    expect(((await me.json()) as { user: { username: string; groups: string[] } }).user).toMatchObject({ username: 'alice', groups: ['team-a'] });
    expect((await withSession(jar, READ())).status).toBe(200);
    expect(await namesLike('alice')).toEqual(['alice']);
    expect(await fg.store.sql.get('SELECT sign_in, oidc_issuer, oidc_subject, origin FROM users WHERE id = ?', [Number(aliceId)])).toEqual({
      sign_in: 'oidc',
      oidc_issuer: idp.issuer,
      oidc_subject: 'idp-alice',
      origin: 'scim',
    });
    expect(await fg.store.sql.get("SELECT actor FROM audit_log WHERE action = 'user.bind' AND target = 'user:alice'")).toEqual({ actor: 'oidc' });
  });

  it('the access key she mints and a bearer JWT of her account are `alice`’s', async () => {
    const minted = await send(jar, `${base}/ajax-api/2.0/mlflow/permissions/users/access-token`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json', origin: base },
      body: '{}',
    });
    expect(minted.status).toBe(200);
    const body = (await minted.json()) as { token: string; username: string };
    expect(body.username).toBe('alice');
    key = body.token;
    expect((await withHeader(basic('alice', key), READ())).status).toBe(200);
    jwt = await jwtOf('idp-alice', 'Alice', ['team-a']);
    const viaJwt = await withHeader(`Bearer ${jwt}`, CURRENT);
    expect(viaJwt.status, await viaJwt.clone().text()).toBe(200);
    expect(((await viaJwt.json()) as { user: { username: string } }).user.username).toBe('alice');
    expect((await withHeader(`Bearer ${jwt}`, READ())).status).toBe(200);
    // A second sign-in, whatever case the provider sends, is still her.
    const again = await signIn('idp-alice');
    expect(again.status).toBe(302);
    expect(await namesLike('alice')).toEqual(['alice']);
  });

  it('SCIM’s deactivation of `alice` ends her session, her key and her JWTs, and refuses a new sign-in', async () => {
    const off = await scim().patch(`/Users/${aliceId}`, [{ op: 'replace', path: 'active', value: false }]);
    expect(off.status, off.text).toBe(200);
    expect((await withSession(jar, CURRENT)).status).toBe(401);
    expect((await withHeader(basic('alice', key), READ())).status).toBe(401);
    expect((await withHeader(`Bearer ${jwt}`, READ())).status).toBe(401);
    expect((await withHeader(`Bearer ${await jwtOf('idp-alice', 'Alice')}`, READ())).status).toBe(401);
    const refused = await signIn('idp-alice');
    expect(refused.status).toBe(403);
    expect(refused.page).toContain('Account disabled');
    expect(refused.jar.get(SESSION)).toBeUndefined();
    expect(await namesLike('alice')).toEqual(['alice']);
    // SCIM's delete takes the one account away.
    expect((await scim().delete(`/Users/${aliceId}`)).status).toBe(204);
    expect(await namesLike('alice')).toEqual([]);
  });
});

describe('a bearer JWT’s first use follows the same rule', () => {
  it('`CAROL`’s JWT (the sign-in issuer) binds the `carol` SCIM made; `Dave`’s is refused the `dave` an administrator made, and creates nothing', async () => {
    const carolId = await scimUser('carol');
    const viaJwt = await withHeader(`Bearer ${await jwtOf('idp-carol', 'CAROL')}`, CURRENT);
    expect(viaJwt.status, await viaJwt.clone().text()).toBe(200);
    expect(((await viaJwt.json()) as { user: { username: string } }).user.username).toBe('carol');
    expect(await namesLike('carol')).toEqual(['carol']);
    expect(await fg.store.sql.get('SELECT oidc_subject FROM users WHERE id = ?', [Number(carolId)])).toEqual({ oidc_subject: 'idp-carol' });

    expect((await adminCall('POST', `${V2}/users/create`, { username: 'dave', sign_in: 'oidc' })).status).toBe(201);
    const refused = await withHeader(`Bearer ${await jwtOf('idp-dave', 'Dave')}`, CURRENT);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error_code: string }).error_code).toBe('UNAUTHENTICATED');
    const page = await signIn('idp-dave');
    expect(page.status).toBe(403);
    expect(page.page).toContain('Account not linked');
    expect(await namesLike('dave')).toEqual(['dave']);
    expect(await fg.store.sql.get('SELECT oidc_subject FROM users WHERE username = ?', ['dave'])).toEqual({ oidc_subject: null });
    const logged = fg.logs.filter((l) => l.includes('name_in_other_case'));
    expect(logged.some((l) => l.includes('oidc login refused'))).toBe(true);
    expect(logged.some((l) => l.includes('bearer token refused'))).toBe(true);
  });
});
