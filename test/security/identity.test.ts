import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.js';
import { ADMIN, adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { keycloakHome, KEYCLOAK_VERSION, startKeycloak, type Keycloak } from '../helpers/keycloak.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import {
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
import { USER_SCHEMA, scimCalls } from '../helpers/scim.js';
import { caller, type Caller, type Reply } from './harness/http.js';
import { randomHex } from './harness/world.js';

/**
 * Classes 9 and 12 of "nothing flowgate answers may grant more than MLflow would": the bootstrap
 * administrator cannot be locked out, and a sign-in cannot take over someone else's account.
 * flowgate runs with OIDC (the npm oidc-provider, and a real Keycloak where one can be had) in front
 * of the real MLflow; every attacker's view is the one a browser or the MLflow client would have.
 */
const PREFIXES = ['/api/2.0/mlflow', '/ajax-api/2.0/mlflow'] as const;
const SESSION = 'flowgate_session';
const SCIM_TOKEN = 'identity-scim-token-0123456789abcdef0123456';
const SCIM_ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const quiet = () => {};

let mlflow: MlflowServer;
let idp: TestProvider;
let fg: OidcFlowgate;
let base: string;
let admin: Caller;
const expiration = () => new Date(Date.now() + 86_400_000).toISOString();

beforeAll(async () => {
  mlflow = await startMlflowServer();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  idp = await startOidcProvider({
    ...flowgateClientAt(base),
    accounts: [
      // Accounts whose name claim (preferred_username) is someone else's name at flowgate.
      { username: 'idp-admin', preferredUsername: ADMIN.username, name: 'Not the operator', roles: ['mlflow-admin'] },
      { username: 'idp-tina', preferredUsername: 'tina', name: 'Tina at the provider', roles: ['impostors'] },
      { username: 'idp-ops', preferredUsername: 'ops', name: 'Ops at the provider', roles: [] },
      { username: 'carl', name: 'Carl', roles: ['team-c'] },
      { username: 'carl-twin', preferredUsername: 'carl', name: 'Carl twin', roles: ['mlflow-admin'] },
      { username: 'alice-at-idp', preferredUsername: 'alice', name: 'Alice', roles: ['team-a'] },
      { username: 'alice-twin', preferredUsername: 'alice', name: 'Alice twin', roles: ['mlflow-admin'] },
    ],
  });
  // SCIM is on too: its token is what an attacker of class 12 may have stolen.
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-identity-'));
  writeFileSync(join(dir, 'scim-token'), SCIM_TOKEN);
  fg = await startOidcFlowgate(
    {
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_OIDC_ISSUER_URL: idp.issuer,
      FLOWGATE_OIDC_ADMIN_ROLE: 'mlflow-admin',
      FLOWGATE_SCIM_TOKEN_FILE: join(dir, 'scim-token'),
      FLOWGATE_SCIM_BURST: '1000',
      FLOWGATE_SCIM_RATE_PER_SECOND: '1000',
    },
    port,
    dir,
  );
  admin = caller(base, adminAuth(), quiet);
}, 300_000);

afterAll(async () => {
  await fg?.close();
  await idp?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

function ok(reply: Reply, what: string): any {
  if (reply.status >= 300) throw new Error(`${what}: ${reply.status} ${reply.text}`);
  return reply.json;
}
/** A refusal in MLflow's error JSON. */
function expectMlflowError(reply: Reply, status: number, what: string): void {
  expect(reply.status, `${what}: ${reply.text}`).toBe(status);
  expect(typeof reply.json?.error_code, what).toBe('string');
  expect(typeof reply.json?.message, what).toBe('string');
}

/** A person with an access token (a "token user", local: no sign-in reaches them; with OIDC configured, local only when asked for). */
async function tokenUser(username: string, body: Record<string, unknown> = {}): Promise<Caller> {
  ok(await admin('POST', `/api/2.0/mlflow/users/create`, { body: { username, sign_in: 'local', ...body } }), `create ${username}`);
  const token = ok(await admin('PATCH', `/api/2.0/mlflow/permissions/users/access-token`, { body: { username, expiration: expiration() } }), 'token').token as string;
  return caller(base, basic(username, token), quiet);
}
async function experiment(name: string): Promise<string> {
  return ok(await admin('POST', '/api/2.0/mlflow/experiments/create', { body: { name: `${name}-${randomHex(4)}` } }), 'experiment').experiment_id as string;
}
const userRow = (username: string) => fg.store.sql.get<Record<string, unknown>>('SELECT * FROM users WHERE username = ?', [username]);
/** Everything a sign-in could change about a user: the record, memberships, grants, tokens, audit. */
async function footprint(username: string): Promise<string> {
  const sql = fg.store.sql;
  return JSON.stringify([
    await userRow(username),
    await sql.all('SELECT g.name FROM group_members m JOIN groups g ON g.id = m.group_id JOIN users u ON u.id = m.user_id WHERE u.username = ? ORDER BY g.name', [username]),
    await sql.all('SELECT resource_kind, resource_id, permission FROM grants WHERE user_id = (SELECT id FROM users WHERE username = ?) ORDER BY 1, 2', [username]),
    await sql.all('SELECT id, revoked_at FROM access_tokens WHERE user_id = (SELECT id FROM users WHERE username = ?) ORDER BY id', [username]),
    await sql.all('SELECT actor, action FROM audit_log WHERE target = ? ORDER BY id', [`user:${username}`]),
  ]);
}

/** Signs in at the provider as `login`; a refusal is flowgate's page, with no session. */
async function signIn(login: string): Promise<{ jar: CookieJar; status: number; page: string }> {
  const jar = new CookieJar();
  const run = await loginWithFetch(jar, `${base}/flowgate/login`, login);
  return { jar, status: run.final.status, page: await run.final.text() };
}
const asSession = (jar: CookieJar, path: string) => send(jar, base + path, { headers: { accept: 'application/json' } });

async function expectRefusedSignIn(login: string): Promise<CookieJar> {
  const { jar, status, page } = await signIn(login);
  expect(status, login).toBe(403);
  expect(page).toContain('Account not linked');
  expect(jar.get(SESSION)).toBeUndefined();
  for (const prefix of PREFIXES) expect((await asSession(jar, `${prefix}/permissions/users/current`)).status, prefix).toBe(401);
  return jar;
}

describe('class 12: a sign-in does not take over someone else\'s account', () => {
  it('an identity-provider account named like the bootstrap admin is refused and changes nothing', async () => {
    const before = await footprint(ADMIN.username);
    await expectRefusedSignIn('idp-admin');
    expect(await footprint(ADMIN.username)).toBe(before);
    expect(await userRow(ADMIN.username)).toMatchObject({ is_admin: 1, sign_in: 'local', oidc_subject: null });
  });

  it('a name matching a token user inherits none of their grants (direct, through a group, by pattern) and leaves their groups', async () => {
    const tina = await tokenUser('tina');
    const [direct, viaGroup, viaPattern] = [await experiment('tina-direct'), await experiment('tina-group'), await experiment('tina-pattern')];
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/tina/experiments/${direct}`, { body: { permission: 'READ' } }), 'direct grant');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/groups/team-t/experiments/${viaGroup}`, { body: { permission: 'READ' } }), 'group grant');
    ok(await admin('POST', '/api/2.0/mlflow/permissions/groups/team-t/users', { body: { username: 'tina' } }), 'membership');
    ok(await admin('POST', '/api/2.0/mlflow/permissions/users/tina/patterns', { body: { resource_type: 'experiment', pattern: 'tina-pattern-*', permission: 'READ' } }), 'pattern grant');
    for (const id of [direct, viaGroup, viaPattern]) expect((await tina('GET', '/api/2.0/mlflow/experiments/get', { query: { experiment_id: id } })).status, `tina reads ${id}`).toBe(200);
    const before = await footprint('tina');

    const jar = await expectRefusedSignIn('idp-tina');
    for (const prefix of PREFIXES)
      for (const id of [direct, viaGroup, viaPattern])
        expect((await asSession(jar, `${prefix}/experiments/get?experiment_id=${id}`)).status, `${prefix} ${id}`).toBe(401);
    expect(await footprint('tina')).toBe(before);
    // tina herself is untouched: her token still reaches what she was granted, through MLflow.
    for (const id of [direct, viaGroup, viaPattern]) expect((await tina('GET', '/ajax-api/2.0/mlflow/experiments/get', { query: { experiment_id: id } })).status).toBe(200);
  });

  it('with an admin role configured, a matching name does not demote another administrator', async () => {
    const ops = await tokenUser('ops', { is_admin: true });
    const before = await footprint('ops');
    await expectRefusedSignIn('idp-ops');
    expect(await footprint('ops')).toBe(before);
    expect((await ops('GET', '/api/2.0/mlflow/permissions/users')).status).toBe(200);
  });

  it('an OIDC user is bound to the account of their sign-in: another account with the same name (even holding the admin role) is refused', async () => {
    const carl = await signIn('carl');
    expect(carl.status).toBe(302);
    expect(await userRow('carl')).toMatchObject({ sign_in: 'oidc', oidc_issuer: idp.issuer, oidc_subject: 'carl', is_admin: 0 });
    const before = await footprint('carl');
    await expectRefusedSignIn('carl-twin');
    expect(await footprint('carl')).toBe(before);
    expect((await asSession(carl.jar, '/ajax-api/2.0/mlflow/permissions/users/current')).status).toBe(200);
  });

  it('an administrator pre-creates a person for OIDC and grants them; their first sign-in links them; no other account can after', async () => {
    const created = ok(await admin('POST', '/ajax-api/2.0/mlflow/users/create', { body: { username: 'alice', sign_in: 'oidc' } }), 'create alice');
    expect(created.user).toMatchObject({ username: 'alice', sign_in: 'oidc', oidc_linked: false });
    const exp = await experiment('alice-work');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/alice/experiments/${exp}`, { body: { permission: 'READ' } }), 'grant alice');

    const alice = await signIn('alice-at-idp');
    expect(alice.status).toBe(302);
    for (const prefix of PREFIXES) expect((await asSession(alice.jar, `${prefix}/experiments/get?experiment_id=${exp}`)).status, prefix).toBe(200);
    expect(ok(await admin('GET', '/api/2.0/mlflow/permissions/users/alice'), 'get alice').user).toMatchObject({ sign_in: 'oidc', oidc_linked: true });
    expect(await fg.store.sql.get("SELECT actor FROM audit_log WHERE action = 'user.bind' AND target = 'user:alice'")).toEqual({ actor: 'oidc' });

    const before = await footprint('alice');
    await expectRefusedSignIn('alice-twin');
    expect(await footprint('alice')).toBe(before);
  });

  it('a local user is reached by a sign-in only after an administrator links them explicitly', async () => {
    await tokenUser('ted');
    idp.accounts.set('idp-ted', { username: 'idp-ted', preferredUsername: 'ted', name: 'Ted', roles: [] });
    await expectRefusedSignIn('idp-ted');
    const linked = ok(await admin('PATCH', '/api/2.0/mlflow/permissions/users/ted', { body: { sign_in: 'oidc' } }), 'link ted');
    expect(linked.user).toMatchObject({ sign_in: 'oidc', oidc_linked: false });
    const ted = await signIn('idp-ted');
    expect(ted.status).toBe(302);
    expect(JSON.parse(await (await asSession(ted.jar, '/api/2.0/mlflow/permissions/users/current')).text()).user.username).toBe('ted');
  });
});

describe('class 12: who a new person is, and who may say how they sign in', () => {
  it('with OIDC configured, a person an administrator creates without sign_in awaits their first sign-in (every create route, prefix and batch), reaching what was granted ahead; service accounts and an explicit local stay local', async () => {
    const created: Record<string, any> = {};
    created['dora-a'] = ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'dora-a' } }), 'create dora-a').user;
    created['dora-b'] = ok(await admin('POST', '/ajax-api/2.0/mlflow/users', { body: { username: 'dora-b', display_name: 'Dora B' } }), 'create dora-b').user;
    ok(await admin('POST', '/ajax-api/2.0/mlflow/permissions/batch', { body: { calls: [{ method: 'POST', path: 'users/create', body: { username: 'dora-c' } }] } }), 'batch dora-c');
    created['dora-c'] = ok(await admin('GET', '/api/2.0/mlflow/permissions/users/dora-c'), 'get dora-c').user;
    for (const name of ['dora-a', 'dora-b', 'dora-c']) expect(created[name], name).toMatchObject({ username: name, sign_in: 'oidc', oidc_linked: false });
    const robot = ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'dora-sa', is_service_account: true } }), 'create dora-sa').user;
    expect(robot).toMatchObject({ is_service_account: true, sign_in: 'local' });
    const local = ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'dora-l', sign_in: 'local' } }), 'create dora-l').user;
    expect(local).toMatchObject({ sign_in: 'local', oidc_linked: false });

    // Granted ahead of their first sign-in: directly, by pattern, and to the group their provider role puts them in.
    const direct = await experiment('dora-direct');
    const viaGroup = await experiment('dora-group');
    const viaPattern = await experiment('dora-pattern');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/dora-a/experiments/${direct}`, { body: { permission: 'READ' } }), 'direct grant');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/groups/team-dora/experiments/${viaGroup}`, { body: { permission: 'READ' } }), 'group grant');
    ok(await admin('POST', '/api/2.0/mlflow/permissions/users/dora-c/patterns', { body: { resource_type: 'experiment', pattern: 'dora-pattern-*', permission: 'READ' } }), 'pattern');
    for (const [name, exp, roles] of [['dora-a', direct, []], ['dora-b', viaGroup, ['team-dora']], ['dora-c', viaPattern, []]] as const) {
      idp.accounts.set(`idp-${name}`, { username: `idp-${name}`, preferredUsername: name, name, roles: [...roles] });
      const session = await signIn(`idp-${name}`);
      expect(session.status, name).toBe(302);
      for (const prefix of PREFIXES) expect((await asSession(session.jar, `${prefix}/experiments/get?experiment_id=${exp}`)).status, `${name} ${prefix}`).toBe(200);
      expect(await userRow(name), name).toMatchObject({ sign_in: 'oidc', oidc_subject: `idp-${name}` });
    }
    // Asked for access tokens only: no sign-in reaches her.
    idp.accounts.set('idp-dora-l', { username: 'idp-dora-l', preferredUsername: 'dora-l', name: 'dora-l', roles: [] });
    await expectRefusedSignIn('idp-dora-l');

    // Without OIDC configured, the default is access tokens only.
    const plain = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    try {
      const made = ok(await caller(plain.url, adminAuth(), quiet)('POST', '/ajax-api/2.0/mlflow/users/create', { body: { username: 'dora-n' } }), 'create dora-n').user;
      expect(made).toMatchObject({ sign_in: 'local' });
    } finally {
      await plain.close();
      removeDir(plain.dir);
    }
  });

  it('no one but an administrator sets sign_in, on anyone or themselves: not a manager (direct, through a group, by pattern), not a signed-in person, by any route or prefix', async () => {
    const name = `sg-${randomHex(4)}`;
    const exp = ok(await admin('POST', '/api/2.0/mlflow/experiments/create', { body: { name } }), 'experiment').experiment_id as string;
    const mia = await tokenUser('mia');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/mia/experiments/${exp}`, { body: { permission: 'MANAGE' } }), 'mia manages');
    const gus = await tokenUser('gus');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/groups/team-sg/experiments/${exp}`, { body: { permission: 'MANAGE' } }), 'team-sg manages');
    ok(await admin('POST', '/api/2.0/mlflow/permissions/groups/team-sg/users', { body: { username: 'gus' } }), 'gus in team-sg');
    const pam = await tokenUser('pam');
    ok(await admin('POST', '/api/2.0/mlflow/permissions/users/pam/patterns', { body: { resource_type: 'experiment', pattern: `${name}*`, permission: 'MANAGE' } }), 'pam pattern');
    await tokenUser('lena');
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'owen', sign_in: 'oidc' } }), 'owen awaits');
    idp.accounts.set('idp-olga', { username: 'idp-olga', preferredUsername: 'olga', name: 'Olga', roles: [] });
    const olgaSession = await signIn('idp-olga');
    expect(olgaSession.status).toBe(302);
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/olga/experiments/${exp}`, { body: { permission: 'MANAGE' } }), 'olga manages');
    const session = caller(base, undefined, quiet);
    const olga: Caller = (method, path, options = {}) =>
      session(method, path, { ...options, headers: { cookie: olgaSession.jar.header(base), origin: base, accept: 'application/json', ...options.headers } });

    const callers = { mia, gus, pam, olga } as const;
    // They do manage the experiment: what they are refused below is not for want of rights.
    for (const [who, call] of Object.entries(callers))
      expect((await call('GET', `/ajax-api/2.0/mlflow/permissions/ui/experiments/${exp}/grants`)).status, who).toBe(200);

    const targets = ['mia', 'gus', 'pam', 'olga', 'lena', 'owen', ADMIN.username];
    const before = await Promise.all(targets.map(footprint));
    const flip = (signIn: unknown) => (signIn === 'oidc' ? 'local' : 'oidc');
    let tried = 0;
    for (const [who, call] of Object.entries(callers)) {
      for (const prefix of PREFIXES) {
        for (const target of targets) {
          const row = await userRow(target);
          for (const body of [{ sign_in: flip(row!.sign_in) }, { sign_in: row!.sign_in }, { display_name: target, sign_in: flip(row!.sign_in) }]) {
            expectMlflowError(await call('PATCH', `${prefix}/permissions/users/${target}`, { body }), 403, `${who} PATCH ${prefix} ${target} ${JSON.stringify(body)}`);
            tried++;
          }
          const batch = { calls: [{ method: 'PATCH', path: `permissions/users/${target}`, body: { sign_in: flip(row!.sign_in) } }] };
          expectMlflowError(await call('POST', `${prefix}/permissions/batch`, { body: batch }), 403, `${who} batch ${prefix} ${target}`);
        }
        for (const path of ['users/create', 'users'])
          for (const signIn of ['oidc', 'local'])
            expectMlflowError(await call('POST', `${prefix}/${path}`, { body: { username: `new-${who}`, sign_in: signIn } }), 403, `${who} POST ${prefix}/${path} ${signIn}`);
        // The one user route a person may change about themselves takes no sign_in.
        const mint = await call('PATCH', `${prefix}/permissions/users/access-token`, { body: { username: who, expiration: expiration(), sign_in: 'oidc' } });
        expectMlflowError(mint, 400, `${who} access-token ${prefix}`);
        expect(mint.json.message).toContain("'sign_in'");
      }
    }
    expect(tried).toBeGreaterThan(100);
    expect(await Promise.all(targets.map(footprint))).toEqual(before);
    for (const who of Object.keys(callers)) expect(await userRow(`new-${who}`), who).toBeUndefined();
    // Their credentials still work: nothing was minted, revoked or ended.
    for (const [who, call] of Object.entries(callers))
      for (const prefix of PREFIXES) expect((await call('GET', `${prefix}/experiments/get`, { query: { experiment_id: exp } })).status, `${who} ${prefix}`).toBe(200);
  });
});

describe('class 12: a stolen SCIM token does not choose who a person is', () => {
  const scim = () => scimCalls(base, SCIM_TOKEN);
  const scimIdOf = async (userName: string): Promise<string | undefined> => {
    const found = await scim().get(`/Users?filter=${encodeURIComponent(`userName eq "${userName}"`)}`);
    expect(found.status, found.text).toBe(200);
    return (found.body.Resources as Array<{ id: string }> | undefined)?.[0]?.id;
  };
  const patch = (id: string, ops: object[]) => scim().patch(`/Users/${id}`, ops);
  const me = async (jar: CookieJar) => JSON.parse(await (await asSession(jar, '/api/2.0/mlflow/permissions/users/current')).text()).user;

  it('an administrator created ahead (awaiting their first sign-in) is listed but never renamed, deactivated or deleted (403); the account it would have been renamed to signs in as a new, powerless user', async () => {
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'bob', is_admin: true, sign_in: 'oidc' } }), 'create admin bob');
    const bobId = await scimIdOf('bob');
    expect(bobId, 'SCIM lists administrators (a provider matching userName finds them)').toBeDefined();
    const before = await footprint('bob');
    const attempts: Array<[string, () => PromiseLike<{ status: number; body: any; text: string }>]> = [
      ['PUT userName', () => scim().put(`/Users/${bobId}`, { schemas: [USER_SCHEMA], userName: 'eve' })],
      ['PUT userName, case only', () => scim().put(`/Users/${bobId}`, { schemas: [USER_SCHEMA], userName: 'Bob' })],
      ['PATCH userName', () => patch(bobId!, [{ op: 'replace', path: 'userName', value: 'eve' }])],
      ['PATCH without path', () => patch(bobId!, [{ op: 'replace', value: { userName: 'eve' } }])],
      ['PATCH active', () => patch(bobId!, [{ op: 'replace', path: 'active', value: false }])],
      ['PUT active', () => scim().put(`/Users/${bobId}`, { schemas: [USER_SCHEMA], userName: 'bob', active: false })],
      ['DELETE', () => scim().delete(`/Users/${bobId}`)],
    ];
    for (const [what, attempt] of attempts) {
      const r = await attempt();
      expect(r.status, `${what}: ${r.text}`).toBe(403);
      expect(r.body.schemas, what).toEqual([SCIM_ERROR]);
    }
    expect(await footprint('bob')).toBe(before);
    expect(await userRow('bob')).toMatchObject({ is_admin: 1, sign_in: 'oidc', oidc_subject: null, disabled_at: null });
    expect(fg.logs.some((l) => l.includes('SCIM refused: the user is a flowgate administrator'))).toBe(true);

    // The account the attacker controls: had the rename passed, this sign-in would have bound admin bob.
    idp.accounts.set('idp-eve', { username: 'idp-eve', preferredUsername: 'eve', name: 'Eve', roles: [] });
    const eve = await signIn('idp-eve');
    expect(eve.status, eve.page).toBe(302);
    expect(await me(eve.jar)).toMatchObject({ username: 'eve', is_admin: false });
    for (const prefix of PREFIXES) expect((await asSession(eve.jar, `${prefix}/permissions/users`)).status, prefix).toBe(403);
    expect(await footprint('bob')).toBe(before);

    // An administrator disabled by an administrator is not SCIM's to bring back either.
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'boss-off', is_admin: true, sign_in: 'local' } }), 'create boss-off');
    ok(await admin('POST', '/api/2.0/mlflow/permissions/users/boss-off/disable', { body: {} }), 'disable boss-off');
    const back = await patch((await scimIdOf('boss-off'))!, [{ op: 'replace', path: 'active', value: true }]);
    expect(back.status, back.text).toBe(403);
    expect((await userRow('boss-off'))!.disabled_at).not.toBeNull();
  });

  it('a person an administrator created ahead, with grants, keeps their name until their first sign-in (400 mutability): their grants never go to the account SCIM picks; bound, SCIM renames them', async () => {
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'pia' } }), 'create pia (awaits OIDC sign-in)');
    const exp = await experiment('pia-work');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/pia/experiments/${exp}`, { body: { permission: 'READ' } }), 'grant pia');
    const piaId = (await scimIdOf('pia'))!;
    const before = await footprint('pia');
    for (const r of [
      await scim().put(`/Users/${piaId}`, { schemas: [USER_SCHEMA], userName: 'eve2' }),
      await patch(piaId, [{ op: 'replace', path: 'userName', value: 'eve2' }]),
      await patch(piaId, [{ op: 'replace', path: 'userName', value: 'Pia' }]),
    ]) {
      expect(r.status, r.text).toBe(400);
      expect(r.body).toMatchObject({ schemas: [SCIM_ERROR], scimType: 'mutability' });
    }
    expect(await footprint('pia')).toBe(before);
    idp.accounts.set('idp-eve2', { username: 'idp-eve2', preferredUsername: 'eve2', name: 'Eve 2', roles: [] });
    const eve = await signIn('idp-eve2');
    expect(eve.status).toBe(302);
    expect(await me(eve.jar)).toMatchObject({ username: 'eve2' });
    for (const prefix of PREFIXES) expect((await asSession(eve.jar, `${prefix}/experiments/get?experiment_id=${exp}`)).status, prefix).not.toBe(200);

    // Her own sign-in binds her; from then on the binding, not the name, is who she is.
    idp.accounts.set('idp-pia', { username: 'idp-pia', preferredUsername: 'pia', name: 'Pia', roles: [] });
    const pia = await signIn('idp-pia');
    expect(pia.status).toBe(302);
    const renamed = await patch(piaId, [{ op: 'replace', path: 'userName', value: 'pia.p' }]);
    expect(renamed.status, renamed.text).toBe(200);
    const again = await signIn('idp-pia');
    expect(again.status).toBe(302);
    expect(await me(again.jar)).toMatchObject({ username: 'pia.p' });
    expect((await asSession(again.jar, `/api/2.0/mlflow/experiments/get?experiment_id=${exp}`)).status).toBe(200);
  });
});

describe('class 12: a name in another case is not a second account', () => {
  const scim = () => scimCalls(base, SCIM_TOKEN);
  /** Every user whose name is `name` in any case. */
  const namesLike = async (name: string) =>
    (await fg.store.sql.all<{ username: string }>('SELECT username FROM users WHERE lower(username) = lower(?) ORDER BY username', [name])).map((r) => r.username);
  const scimUser = async (userName: string): Promise<string> => {
    const r = await scim().post('/Users', { schemas: [USER_SCHEMA], userName, externalId: `ext-${userName}` });
    expect(r.status, r.text).toBe(201);
    return r.body.id as string;
  };

  it('SCIM made `sally`; the provider’s `Sally` binds her (one account), and SCIM’s deactivation of `sally` ends that sign-in', async () => {
    const sallyId = await scimUser('sally');
    const exp = await experiment('sally-work');
    ok(await admin('POST', `/api/2.0/mlflow/permissions/users/sally/experiments/${exp}`, { body: { permission: 'READ' } }), 'grant sally');
    idp.accounts.set('idp-sally', { username: 'idp-sally', preferredUsername: 'Sally', name: 'Sally S', roles: ['team-s'] });
    const sally = await signIn('idp-sally');
    expect(sally.status, sally.page).toBe(302);
    expect(JSON.parse(await (await asSession(sally.jar, '/api/2.0/mlflow/permissions/users/current')).text()).user.username).toBe('sally');
    for (const prefix of PREFIXES) expect((await asSession(sally.jar, `${prefix}/experiments/get?experiment_id=${exp}`)).status, prefix).toBe(200);
    expect(await namesLike('sally')).toEqual(['sally']);
    expect(await userRow('sally')).toMatchObject({ id: Number(sallyId), oidc_subject: 'idp-sally', origin: 'scim' });

    const off = await scim().patch(`/Users/${sallyId}`, [{ op: 'replace', path: 'active', value: false }]);
    expect(off.status, off.text).toBe(200);
    for (const prefix of PREFIXES) expect((await asSession(sally.jar, `${prefix}/experiments/get?experiment_id=${exp}`)).status, prefix).toBe(401);
    const refused = await signIn('idp-sally');
    expect(refused.status).toBe(403);
    expect(refused.page).toContain('Account disabled');
    expect(await namesLike('sally')).toEqual(['sally']);
  });

  it('anyone else holding the name in another case refuses the sign-in and nothing changes: the bootstrap admin, a token user, a bound user, a person an administrator made, an administrator SCIM made, two such users', async () => {
    await tokenUser('lou');
    idp.accounts.set('idp-kim', { username: 'idp-kim', preferredUsername: 'kim', name: 'Kim', roles: [] });
    const kim = await signIn('idp-kim');
    expect(kim.status).toBe(302);
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'pete' } }), 'create pete (awaits OIDC sign-in)');
    await scimUser('sam');
    ok(await admin('PATCH', '/api/2.0/mlflow/permissions/users/sam', { body: { is_admin: true } }), 'promote sam');
    await scimUser('vic');
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'Vic', sign_in: 'local' } }), 'create Vic');

    const cases: Array<[login: string, claim: string, holder: string, name: string]> = [
      ['idp-shouting-admin', ADMIN.username.toUpperCase(), 'bootstrap_admin', ADMIN.username],
      ['idp-lou', 'Lou', 'name_in_other_case', 'lou'],
      ['idp-kim-twin', 'KIM', 'name_in_other_case', 'kim'],
      ['idp-pete', 'Pete', 'name_in_other_case', 'pete'],
      ['idp-sam', 'Sam', 'name_in_other_case', 'sam'],
      ['idp-vic', 'VIC', 'name_in_other_case', 'vic'],
    ];
    for (const [login, claim, holder, name] of cases) {
      idp.accounts.set(login, { username: login, preferredUsername: claim, name: claim, roles: ['mlflow-admin'] });
      const names = await namesLike(name);
      const before = await Promise.all(names.map(footprint));
      await expectRefusedSignIn(login);
      expect(await namesLike(name), claim).toEqual(names);
      expect(await Promise.all(names.map(footprint)), claim).toEqual(before);
      const line = fg.logs.find((l) => l.includes('oidc login refused') && l.includes(`"user":"${claim}"`));
      expect(line, claim).toBeDefined();
      expect(JSON.parse(line!)).toMatchObject({ reason: 'name_taken', holder });
    }
    // The names' holders are untouched: kim's own account still signs in as kim.
    expect((await signIn('idp-kim')).status).toBe(302);
    // And the exact name still binds the person an administrator made.
    idp.accounts.set('idp-pete-exact', { username: 'idp-pete-exact', preferredUsername: 'pete', name: 'Pete', roles: [] });
    const pete = await signIn('idp-pete-exact');
    expect(pete.status).toBe(302);
    expect(await userRow('pete')).toMatchObject({ sign_in: 'oidc', oidc_subject: 'idp-pete-exact' });
  });
});

describe("class 12: a service account's tokens are an administrator's to issue", () => {
  it('holding its token does not renew it, mint another or revoke the issued one, by any minting route, prefix or batch; an administrator still mints; a person still mints their own', async () => {
    ok(await admin('POST', '/api/2.0/mlflow/users/create', { body: { username: 'svc-mint', is_service_account: true } }), 'create svc-mint');
    const issuedBy = expiration();
    const issued = ok(await admin('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { body: { username: 'svc-mint', expiration: issuedBy } }), 'admin mints').token as string;
    const svc = caller(base, basic('svc-mint', issued), quiet);
    const tokens = () => fg.store.sql.all("SELECT id, expires_at, revoked_at FROM access_tokens WHERE user_id = (SELECT id FROM users WHERE username = 'svc-mint') ORDER BY id");
    const before = await tokens();
    expect(before).toHaveLength(1);
    const far = new Date(Date.now() + 300 * 86_400_000).toISOString();
    const attempts: Array<[string, string, unknown]> = [];
    for (const p of PREFIXES)
      attempts.push(
        ['PATCH', `${p}/permissions/users/access-token`, { expiration: far }],
        ['PATCH', `${p}/permissions/users/access-token`, { username: 'svc-mint', expiration: far }],
        ['PATCH', `${p}/permissions/users/access-token`, {}],
        ['POST', `${p}/permissions/users/svc-mint/access-keys`, { name: 'renewed', expiration: far }],
        ['PATCH', `${p}/users/access-token`, { expiration: far }],
        ['POST', `${p}/users/current/tokens`, { name: 'renewed', expiration: far }],
        ['POST', `${p}/users/svc-mint/tokens`, { name: 'renewed', expiration: far }],
        ['POST', `${p}/permissions/batch`, { calls: [{ method: 'PATCH', path: 'permissions/users/access-token', body: { expiration: far } }] }],
      );
    for (const [method, path, body] of attempts) {
      const reply = await svc(method, path, { body });
      expectMlflowError(reply, 403, `${method} ${path} ${JSON.stringify(body)}`);
      expect(reply.json.error_code, path).toBe('PERMISSION_DENIED');
      if (!path.endsWith('/batch')) expect(reply.json.message, path).toContain("service account's access tokens are issued by an administrator");
    }
    expect(await tokens()).toEqual(before);
    // The issued token still works, and listing its own tokens stays open.
    for (const p of PREFIXES) {
      expect((await svc('GET', `${p}/experiments/search?max_results=1`)).status, p).toBe(200);
      expect((await svc('GET', `${p}/permissions/users/svc-mint/access-keys`)).status, p).toBe(200);
      expect((await svc('GET', `${p}/users/current/tokens`)).status, p).toBe(200);
    }
    // An administrator still issues its tokens; a person still renews their own.
    const reissued = ok(await admin('POST', '/api/2.0/mlflow/permissions/users/svc-mint/access-keys', { body: { name: 'pipeline', expiration: expiration() } }), 'admin key').token as string;
    expect((await caller(base, basic('svc-mint', reissued), quiet)('GET', '/api/2.0/mlflow/experiments/search?max_results=1')).status).toBe(200);
    const pat = await tokenUser('pat-mint');
    expect((await pat('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { body: { expiration: expiration() } })).status).toBe(200);
  });
});

describe('class 9: the operator cannot be locked out', () => {
  it('a second administrator cannot demote, delete or relink the bootstrap admin, by any route, prefix or spelling', async () => {
    const root = await tokenUser('root', { is_admin: true });
    const attempts: Array<[string, string, unknown, number]> = [];
    for (const p of PREFIXES) {
      for (const name of [ADMIN.username, '%61dmin'])
        attempts.push(
          ['PATCH', `${p}/permissions/users/${name}`, { is_admin: false }, 400],
          ['PATCH', `${p}/permissions/users/${name}`, { is_admin: false, display_name: 'demoted' }, 400],
          ['PATCH', `${p}/permissions/users/${name}`, { sign_in: 'oidc' }, 400],
          ['DELETE', `${p}/permissions/users/${name}`, undefined, 400],
        );
      attempts.push(
        ['POST', `${p}/permissions/batch`, { calls: [{ method: 'PATCH', path: `permissions/users/${ADMIN.username}`, body: { is_admin: false } }] }, 400],
        ['POST', `${p}/permissions/batch`, { calls: [{ method: 'DELETE', path: `permissions/users/${ADMIN.username}` }] }, 400],
        // A change before the refused one is undone with it.
        ['POST', `${p}/permissions/batch`, { calls: [{ method: 'POST', path: 'users/create', body: { username: 'zed' } }, { method: 'DELETE', path: '/permissions/users/admin' }] }, 400],
        ['POST', `${p}/users/create`, { username: ADMIN.username, is_service_account: true }, 409],
        ['POST', `${p}/users`, { username: ADMIN.username, is_service_account: true }, 409],
      );
    }
    for (const [method, path, body, status] of attempts) {
      const reply = await root(method, path, body === undefined ? {} : { body });
      expectMlflowError(reply, status, `${method} ${path} ${JSON.stringify(body)}`);
      if (status === 400) expect(reply.json.message).toContain('bootstrap administrator');
    }
    expect(ok(await root('GET', `/api/2.0/mlflow/permissions/users/${ADMIN.username}`), 'get admin').user).toMatchObject({ is_admin: true, is_service_account: false, sign_in: 'local' });
    expect(await userRow('zed')).toBeUndefined();
    expect(await fg.store.sql.all("SELECT action FROM audit_log WHERE actor = 'root' AND target = ?", [`user:${ADMIN.username}`])).toEqual([]);
    // The operator still reaches MLflow as an administrator.
    expect((await admin('POST', '/api/2.0/mlflow/experiments/create', { body: { name: `operator-${randomHex(4)}` } })).status).toBe(200);
  });

  it('at restart configuration wins over a store that lost the bootstrap admin, on every replica, repaired once and audited', async () => {
    const minted = ok(await admin('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { body: { username: ADMIN.username, expiration: expiration() } }), 'mint').token as string;
    let replica: TestFlowgate = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url }, fg.dir);
    try {
      // What an older flowgate, or someone with the store, could leave: demoted, a service account, linked to a sign-in, disabled.
      await fg.store.sql.run(
        "UPDATE users SET is_admin = 0, is_service_account = 1, sign_in = 'oidc', oidc_issuer = ?, oidc_subject = 'idp-admin', disabled_at = ? WHERE username = ?",
        [idp.issuer, Date.now(), ADMIN.username],
      );
      fg = await fg.restart();
      replica = await replica.restart();

      expect(await userRow(ADMIN.username)).toMatchObject({ is_admin: 1, is_service_account: 0, sign_in: 'local', oidc_issuer: null, oidc_subject: null, disabled_at: null });
      const repairs = await fg.store.sql.all<{ actor: string; old_value: string }>("SELECT actor, old_value FROM audit_log WHERE action = 'user.repair' AND target = ?", [`user:${ADMIN.username}`]);
      expect(repairs).toHaveLength(1);
      expect(repairs[0]!.actor).toBe('flowgate');
      expect(JSON.parse(repairs[0]!.old_value)).toMatchObject({ is_admin: false, is_service_account: true, sign_in: 'oidc' });
      for (const url of [fg.url, replica.url]) {
        // The configured token is the administrator's, through MLflow; what the record held before is not.
        expect((await caller(url, adminAuth(), quiet)('POST', '/ajax-api/2.0/mlflow/experiments/create', { body: { name: `repaired-${randomHex(4)}` } })).status).toBe(200);
        expect((await caller(url, basic(ADMIN.username, minted), quiet)('GET', '/api/2.0/mlflow/permissions/users')).status).toBe(401);
      }
      await expectRefusedSignIn('idp-admin');

      // Disabled and nothing else: break-glass still works after the next start.
      await fg.store.sql.run('UPDATE users SET disabled_at = ? WHERE username = ?', [Date.now(), ADMIN.username]);
      fg = await fg.restart();
      expect(await userRow(ADMIN.username)).toMatchObject({ is_admin: 1, disabled_at: null });
      expect((await caller(fg.url, adminAuth(), quiet)('GET', '/api/2.0/mlflow/permissions/users')).status).toBe(200);
    } finally {
      await replica.close();
    }
  });
});

const REALM_FILE = fileURLToPath(new URL('../fixtures/keycloak-realm.json', import.meta.url));
const home = await keycloakHome();
if ('unavailable' in home) console.warn(`identity: Keycloak part skipped, Keycloak ${KEYCLOAK_VERSION} cannot be had here: ${home.unavailable}`);

describe.skipIf('unavailable' in home)(`class 12 with a real Keycloak ${KEYCLOAK_VERSION}`, () => {
  let keycloak: Keycloak;
  let kfg: OidcFlowgate;
  let kbase = '';
  let browser: Browser;

  beforeAll(async () => {
    const port = await freePort();
    kbase = `http://127.0.0.1:${port}`;
    keycloak = await startKeycloak((home as { home: string }).home, REALM_FILE, { FLOWGATE: kbase, FLOWGATE_UNMAPPED: `http://127.0.0.1:${await freePort()}` });
    kfg = await startOidcFlowgate(
      {
        FLOWGATE_UPSTREAM_URL: mlflow.url,
        FLOWGATE_OIDC_ISSUER_URL: keycloak.issuer,
        FLOWGATE_OIDC_SCOPES: 'openid profile email',
        FLOWGATE_OIDC_GROUPS_CLAIM: 'realm_access.roles',
        FLOWGATE_OIDC_ADMIN_ROLE: 'mlflow-admin',
        FLOWGATE_OIDC_CLIENT_ID: 'mlflow',
        FLOWGATE_OIDC_CLIENT_SECRET: 'mlflow-client-secret-for-tests-0123456789',
      },
      port,
    );
    browser = await launchBrowser();
  }, 400_000);

  afterAll(async () => {
    await browser?.close();
    await kfg?.close();
    await keycloak?.stop();
    if (kfg) removeDir(kfg.dir);
  });

  /** Signs in at Keycloak's own form and waits to be back at flowgate (its refusal page, or MLflow). */
  async function keycloakSignIn(page: Page, username: string, password: string): Promise<void> {
    await page.goto(`${kbase}/flowgate/login`);
    await page.waitForURL((u) => u.href.startsWith(keycloak.issuer));
    await page.fill('#username', username);
    await page.fill('#password', password);
    await page.click('#kc-login');
    await page.waitForURL((u) => u.href.startsWith(kbase));
    await page.waitForLoadState();
  }
  const kadmin = () => caller(kbase, adminAuth(), quiet);
  const kRow = (username: string) => kfg.store.sql.get<Record<string, unknown>>('SELECT is_admin, sign_in, oidc_subject FROM users WHERE username = ?', [username]);

  it('Keycloak user "admin" (holding the admin role) is refused the bootstrap admin; Keycloak user "tina" is refused the token user until an administrator links her', async () => {
    ok(await kadmin()('POST', '/api/2.0/mlflow/users/create', { body: { username: 'tina', sign_in: 'local' } }), 'create tina');
    ok(await kadmin()('POST', '/api/2.0/mlflow/permissions/groups', { body: { group_name: 'team-t' } }), 'team-t');
    ok(await kadmin()('POST', '/api/2.0/mlflow/permissions/groups/team-t/users', { body: { username: 'tina' } }), 'tina in team-t');
    const adminBefore = JSON.stringify(await kRow(ADMIN.username));

    for (const [username, password] of [[ADMIN.username, 'admin-at-keycloak-password'], ['tina', 'tina-password']] as const) {
      const context = await browser.newContext();
      const page = await context.newPage();
      await keycloakSignIn(page, username, password);
      expect((await context.cookies()).find((c) => c.name === SESSION), username).toBeUndefined();
      expect(await page.title(), username).toContain('Account not linked');
      for (const prefix of PREFIXES)
        expect(await page.evaluate(async (p) => (await fetch(`${p}/permissions/users/current`)).status, prefix), `${username} ${prefix}`).toBe(401);
      await context.close();
    }
    expect(JSON.stringify(await kRow(ADMIN.username))).toBe(adminBefore);
    expect(await kRow('tina')).toMatchObject({ is_admin: 0, sign_in: 'local', oidc_subject: null });
    expect(await kfg.store.sql.all("SELECT g.name FROM group_members m JOIN groups g ON g.id = m.group_id JOIN users u ON u.id = m.user_id WHERE u.username = 'tina'")).toEqual([{ name: 'team-t' }]);

    ok(await kadmin()('PATCH', '/ajax-api/2.0/mlflow/permissions/users/tina', { body: { sign_in: 'oidc' } }), 'link tina');
    const context = await browser.newContext();
    const page = await context.newPage();
    await keycloakSignIn(page, 'tina', 'tina-password');
    const me = (await page.evaluate(async () => (await fetch('/api/2.0/mlflow/permissions/users/current')).json())) as { user: { username: string; groups: string[] } };
    expect(me.user.username).toBe('tina');
    expect(me.user.groups).toContain('team-k');
    const found = (await (await keycloak.admin('GET', '/users?username=tina&exact=true')).json()) as Array<{ id: string }>;
    expect(await kRow('tina')).toMatchObject({ sign_in: 'oidc', oidc_subject: found[0]!.id });
    await context.close();
  }, 240_000);
});
