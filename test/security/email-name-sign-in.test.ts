import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { CookieJar, flowgateClientAt, freePort, loginWithFetch, send, startOidcFlowgate, startOidcProvider, type OidcFlowgate, type TestProvider } from '../helpers/oidc-provider.js';
import { caller, type Caller, type Reply } from './harness/http.js';
import { randomHex } from './harness/world.js';

/**
 * With `FLOWGATE_OIDC_USERNAME_CLAIM=email` a user's name is their address, and an address the
 * provider has not verified could be anyone's: typed at sign-up by whoever wants the name. The real
 * sign-in (npm oidc-provider, its claims in userinfo only, so flowgate must fetch `email_verified`
 * there) in front of the real MLflow: an unverified or unconfirmed address gets flowgate's 403 page,
 * no session and no change to the person created ahead under it; a verified one signs in and links them.
 */
const SESSION = 'flowgate_session';
const VICTIM = 'victim@example.com';
const quiet = () => {};

let mlflow: MlflowServer;
let idp: TestProvider;
let fg: OidcFlowgate;
/** A second flowgate on the same provider, set with FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL. */
let lax: OidcFlowgate;
let base = '';
let laxBase = '';
let admin: Caller;

beforeAll(async () => {
  mlflow = await startMlflowServer();
  const port = await freePort();
  const laxPort = await freePort();
  base = `http://127.0.0.1:${port}`;
  laxBase = `http://127.0.0.1:${laxPort}`;
  const [strictClient, laxClient] = [flowgateClientAt(base), flowgateClientAt(laxBase)];
  idp = await startOidcProvider({
    redirectUris: [...strictClient.redirectUris, ...laxClient.redirectUris],
    postLogoutRedirectUris: [...strictClient.postLogoutRedirectUris, ...laxClient.postLogoutRedirectUris],
    accounts: [
      { username: 'idp-mallory', name: 'Mallory', roles: [], email: VICTIM, emailVerified: false },
      { username: 'idp-mallory-quiet', name: 'Mallory again', roles: [], email: VICTIM },
      { username: 'idp-mallory-string', name: 'Mallory, a string', roles: [], email: VICTIM, emailVerified: 'false' as unknown as boolean },
      { username: 'idp-victim', name: 'The victim', roles: [], email: VICTIM, emailVerified: true },
      { username: 'idp-entra', name: 'Signs in where addresses are never verified', roles: [], email: 'entra@example.com' },
    ],
  });
  fg = await startOidcFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      FLOWGATE_OIDC_SCOPES: 'openid profile email groups roles',
      FLOWGATE_OIDC_USERNAME_CLAIM: 'email',
    },
    port,
    mkdtempSync(join(tmpdir(), 'flowgate-email-name-')),
  );
  lax = await startOidcFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      FLOWGATE_OIDC_SCOPES: 'openid profile email groups roles',
      FLOWGATE_OIDC_USERNAME_CLAIM: 'email',
      FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL: 'true',
    },
    laxPort,
    mkdtempSync(join(tmpdir(), 'flowgate-email-name-lax-')),
  );
  admin = caller(base, adminAuth(), quiet);
}, 300_000);

afterAll(async () => {
  await lax?.close();
  if (lax) removeDir(lax.dir);
  await fg?.close();
  await idp?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

function ok(reply: Reply, what: string): any {
  if (reply.status >= 300) throw new Error(`${what}: ${reply.status} ${reply.text}`);
  return reply.json;
}
const asSession = (jar: CookieJar, path: string) => send(jar, base + path, { headers: { accept: 'application/json' } });
async function signIn(login: string, at = base): Promise<{ jar: CookieJar; status: number; page: string }> {
  const jar = new CookieJar();
  const run = await loginWithFetch(jar, `${at}/flowgate/login`, login);
  return { jar, status: run.final.status, page: await run.final.text() };
}
/** What a sign-in could change about the person created ahead: the record, grants, audit. */
async function footprint(username: string): Promise<string> {
  const sql = fg.store.sql;
  return JSON.stringify([
    await sql.get('SELECT * FROM users WHERE username = ?', [username]),
    await sql.all('SELECT resource_kind, resource_id, permission FROM grants WHERE user_id = (SELECT id FROM users WHERE username = ?) ORDER BY 1, 2', [username]),
    await sql.all('SELECT actor, action FROM audit_log WHERE target = ? ORDER BY id', [`user:${username}`]),
  ]);
}

describe('a name taken from the email claim', () => {
  let experimentId = '';

  it('an unverified, unconfirmed or string-"false" address is refused with a page saying why, and takes over nobody', async () => {
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: VICTIM, sign_in: 'oidc' } }), 'create the victim ahead');
    experimentId = ok(await admin('POST', '/api/2.0/mlflow/experiments/create', { body: { name: `victim-${randomHex(4)}` } }), 'experiment').experiment_id as string;
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/${encodeURIComponent(VICTIM)}/experiments/${experimentId}`, { body: { permission: 'READ' } }), 'grant');
    const before = await footprint(VICTIM);
    const usersBefore = await fg.store.sql.get('SELECT count(*) AS n FROM users');

    for (const login of ['idp-mallory', 'idp-mallory-quiet', 'idp-mallory-string']) {
      const { jar, status, page } = await signIn(login);
      expect(status, login).toBe(403);
      expect(page, login).toContain('Email address not verified');
      expect(page, login).not.toContain(VICTIM);
      expect(jar.get(SESSION), login).toBeUndefined();
      expect((await asSession(jar, `/api/2.0/mlflow/experiments/get?experiment_id=${experimentId}`)).status, login).toBe(401);
    }
    expect(await footprint(VICTIM)).toBe(before);
    expect(await fg.store.sql.get('SELECT count(*) AS n FROM users')).toEqual(usersBefore);
  });

  it('a verified address signs in as the person created ahead and reads what they were granted, from MLflow', async () => {
    const { jar, status } = await signIn('idp-victim');
    expect(status).toBe(302);
    expect(jar.get(SESSION)).toBeDefined();
    const read = await asSession(jar, `/api/2.0/mlflow/experiments/get?experiment_id=${experimentId}`);
    expect(read.status).toBe(200);
    expect(((await read.json()) as { experiment: { experiment_id: string } }).experiment.experiment_id).toBe(experimentId);
    expect(await fg.store.sql.get('SELECT sign_in, oidc_subject FROM users WHERE username = ?', [VICTIM])).toEqual({ sign_in: 'oidc', oidc_subject: 'idp-victim' });
  });

  it('FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL (for providers that never send email_verified) lets an unconfirmed address sign in, and says so at start', async () => {
    expect((await signIn('idp-entra')).status).toBe(403);
    const { jar, status } = await signIn('idp-entra', laxBase);
    expect(status).toBe(302);
    const me = await send(jar, `${laxBase}/api/2.0/mlflow/permissions/users/current`, { headers: { accept: 'application/json' } });
    expect(me.status).toBe(200);
    expect(JSON.stringify(await me.json())).toContain('entra@example.com');
    expect(lax.logs.join('')).toContain('FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL');
    expect(fg.logs.join('')).not.toContain('FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL');
  });
});
