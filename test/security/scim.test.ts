import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { newKey, serviceAccountClaims, signWith, type IssuerKey } from '../helpers/jwt-issuers.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * SCIM from the attacker's side, and de-provisioning as the identity provider relies on it, against
 * the real MLflow with two flowgates on one store (the same SQLite file, or the same PostgreSQL
 * database with FLOWGATE_TEST_STORE=postgres). `/scim/v2` takes only its own bearer token (not an
 * admin's credentials), the replaced one only within its grace; requests without it are
 * rate-limited per client address and the identity provider's against its token, so a flood
 * without the token never holds the provider back; it can neither make an administrator nor see
 * or touch the bootstrap admin; filters and ids are data, never code. A user deactivated through SCIM (or an administrator) loses their sessions and tokens
 * on both flowgates within 1 s.
 */
const V2 = '/api/2.0/mlflow';
const BOUND_MS = 1000;
const GRACE_S = 1;
const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';
/** A kubernetes issuer, at its defaults: service accounts `k8s.<namespace>.<name>`, namespace groups `k8s:<namespace>`. */
const CLUSTER = 'https://kubernetes.default.svc.cluster.local';
const CLUSTER_AUD = 'flowgate';
let clusterKey: IssuerKey;

let mlflow: MlflowServer;
let a: TestFlowgate;
let b: TestFlowgate;
let tokenFile = '';
let scimToken = 'scim-first-token-0123456789abcdef0123456789';
let shared = '';

const scim = (fg: TestFlowgate, token = scimToken) => {
  const auth = (r: request.Test) => r.set('Authorization', `Bearer ${token}`).set('Content-Type', 'application/scim+json');
  return {
    get: (path: string) => auth(request(fg.url).get(`/scim/v2${path}`)),
    post: (path: string, body: object) => auth(request(fg.url).post(`/scim/v2${path}`)).send(JSON.stringify(body)),
    put: (path: string, body: object) => auth(request(fg.url).put(`/scim/v2${path}`)).send(JSON.stringify(body)),
    patch: (path: string, ops: object[]) => auth(request(fg.url).patch(`/scim/v2${path}`)).send(JSON.stringify({ schemas: [PATCH_OP], Operations: ops })),
    delete: (path: string) => auth(request(fg.url).delete(`/scim/v2${path}`)),
  };
};
const admin = (fg: TestFlowgate) => ({
  get: (path: string) => request(fg.url).get(path).set('Authorization', adminAuth()),
  post: (path: string, body: object) => request(fg.url).post(path).set('Authorization', adminAuth()).send(body),
  patch: (path: string, body: object) => request(fg.url).patch(path).set('Authorization', adminAuth()).send(body),
});
const originOf = (fg: TestFlowgate) => new URL(fg.url).origin;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  mlflow = await startMlflowServer();
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-scim-sec-'));
  tokenFile = join(dir, 'scim-token');
  writeFileSync(tokenFile, scimToken);
  clusterKey = await newKey('cluster-key');
  writeFileSync(join(dir, 'cluster-jwks.json'), JSON.stringify({ keys: [clusterKey.publicJwk] }));
  const env = {
    FLOWGATE_UPSTREAM_URL: mlflow.url,
    FLOWGATE_STORE_WATCH_MS: '250',
    FLOWGATE_SESSION_COOKIE_SECURE: 'false',
    FLOWGATE_SCIM_TOKEN_FILE: tokenFile,
    FLOWGATE_SCIM_TOKEN_GRACE_SECONDS: String(GRACE_S),
    FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ kind: 'kubernetes', issuer: CLUSTER, audience: CLUSTER_AUD, jwks_file: join(dir, 'cluster-jwks.json') }]),
  };
  a = await startTestFlowgate({ ...env, FLOWGATE_SCIM_RATE_PER_SECOND: '1000', FLOWGATE_SCIM_BURST: '10000' }, dir);
  // b's bucket is small: the rate-limit case runs there.
  b = await startTestFlowgate({ ...env, FLOWGATE_SCIM_RATE_PER_SECOND: '0.5', FLOWGATE_SCIM_BURST: '5' }, dir);
  shared = (await admin(a).post(`${V2}/experiments/create`, { name: 'scim-shared' }).expect(200)).body.experiment_id;
  await admin(a).post(`${V2}/permissions/groups`, { group_name: 'scim-readers' }).expect(201);
  await admin(a).post(`${V2}/permissions/groups/scim-readers/experiments/${shared}`, { permission: 'READ' }).expect(201);
}, 300_000);

afterAll(async () => {
  await b?.close();
  await a?.close();
  if (a) removeDir(a.dir);
  await mlflow?.stop();
});

/** Polls until `check` holds on every flowgate given, failing after `ms`. */
async function within(ms: number, targets: readonly TestFlowgate[], check: (fg: TestFlowgate) => Promise<boolean>): Promise<void> {
  const started = Date.now();
  const pending = new Set(targets);
  while (pending.size > 0) {
    for (const fg of [...pending]) if (await check(fg)) pending.delete(fg);
    if (pending.size === 0) return;
    if (Date.now() - started > ms) throw new Error(`not on ${pending.size} flowgate(s) within ${ms} ms`);
    await sleep(20);
  }
}

const readWithToken = async (fg: TestFlowgate, username: string, token: string) =>
  (await request(fg.url).get(`${V2}/experiments/get`).query({ experiment_id: shared }).set('Authorization', basic(username, token))).status;
const readWithCookie = async (fg: TestFlowgate, cookie: string) => (await request(fg.url).get(`${V2}/experiments/get`).query({ experiment_id: shared }).set('Cookie', cookie)).status;

/** A SCIM-provisioned person in `scim-readers`, with an access token, signed in on b: its SCIM id, token and session cookie. */
async function provisioned(userName: string): Promise<{ id: string; token: string; cookie: string }> {
  const made = await scim(a).post('/Users', { schemas: [USER_SCHEMA], userName, externalId: `idp-${userName}` });
  expect(made.status, made.text).toBe(201);
  await admin(a).post(`${V2}/permissions/groups/scim-readers/users`, { username: userName }).expect(201);
  const token = (await admin(a).patch(`${V2}/permissions/users/access-token`, { username: userName }).expect(200)).body.token as string;
  await within(BOUND_MS, [a, b], async (fg) => (await readWithToken(fg, userName, token)) === 200);
  const login = await request(b.url).post('/flowgate/login').set('Origin', originOf(b)).type('form').send({ username: userName, token, return_to: '/' });
  expect(login.status, login.text).toBe(302);
  const cookie = ([] as string[]).concat(login.headers['set-cookie'] ?? []).find((c) => c.startsWith('flowgate_session='))!.split(';')[0]!;
  for (const fg of [a, b]) expect(await readWithCookie(fg, cookie)).toBe(200);
  return { id: made.body.id as string, token, cookie };
}

/** The token and the session are refused on both flowgates within 1 s of `t0`. */
async function expectDead(t0: number, username: string, held: { token: string; cookie: string }): Promise<void> {
  await within(BOUND_MS - (Date.now() - t0), [a, b], async (fg) => (await readWithToken(fg, username, held.token)) === 401 && (await readWithCookie(fg, held.cookie)) === 401);
}

describe('de-provisioning reaches every flowgate on the store within 1 s', () => {
  it('PATCH active=false through SCIM on one flowgate: the token and the session die on both; enabling again gives neither back', async () => {
    const held = await provisioned('scim-gone');
    const t0 = Date.now();
    const off = await scim(a).patch(`/Users/${held.id}`, [{ op: 'replace', path: 'active', value: false }]);
    expect(off.status, off.text).toBe(200);
    expect(off.body.active).toBe(false);
    await expectDead(t0, 'scim-gone', held);
    // Refused afterwards too: no sign-in with the old token, and enabling brings back nothing ended.
    const again = await request(a.url).post('/flowgate/login').set('Origin', originOf(a)).type('form').send({ username: 'scim-gone', token: held.token, return_to: '/' });
    expect(again.status).not.toBe(302);
    await scim(a).patch(`/Users/${held.id}`, [{ op: 'replace', path: 'active', value: true }]).expect(200);
    await sleep(600);
    for (const fg of [a, b]) {
      expect(await readWithToken(fg, 'scim-gone', held.token)).toBe(401);
      expect(await readWithCookie(fg, held.cookie)).toBe(401);
    }
  });

  it('DELETE through SCIM: the same, and the user is gone', async () => {
    const held = await provisioned('scim-deleted');
    const t0 = Date.now();
    await scim(a).delete(`/Users/${held.id}`).expect(204);
    await expectDead(t0, 'scim-deleted', held);
    expect((await admin(b).get(`${V2}/permissions/users/scim-deleted`)).status).toBe(404);
  });

  it('an administrator’s disable (admin API on the other flowgate) does the same, and a disabled user is refused a new token’s use', async () => {
    const held = await provisioned('scim-admin-off');
    const t0 = Date.now();
    const off = await admin(b).post(`${V2}/permissions/users/scim-admin-off/disable`, {});
    expect(off.status, off.text).toBe(200);
    expect(off.body.user).toMatchObject({ disabled: true, origin: 'scim' });
    await expectDead(t0, 'scim-admin-off', held);
    // A token minted while disabled proves nothing either.
    const minted = (await admin(a).patch(`${V2}/permissions/users/access-token`, { username: 'scim-admin-off' }).expect(200)).body.token as string;
    await sleep(600);
    for (const fg of [a, b]) expect(await readWithToken(fg, 'scim-admin-off', minted)).toBe(401);
    await admin(a).post(`${V2}/permissions/users/scim-admin-off/enable`, {}).expect(200);
    await within(BOUND_MS, [a, b], async (fg) => (await readWithToken(fg, 'scim-admin-off', minted)) === 200);
  });
});

describe('an administrator’s disable is not SCIM’s to undo', () => {
  /** Okta's and Entra ID's profile sync: the whole user again, `active: true` every time. */
  const profileSync = (id: string, userName: string, displayName: string) =>
    scim(a).put(`/Users/${id}`, { schemas: [USER_SCHEMA], userName, externalId: `idp-${userName}`, displayName, active: true });
  const stateOf = async (userName: string) => {
    const user = (await admin(b).get(`${V2}/permissions/users/${userName}`).expect(200)).body.user;
    return { disabled: user.disabled as boolean, disabled_by: user.disabled_by as string | null };
  };

  it('PUT or PATCH active=true leaves a user an administrator disabled disabled: 200 answering active=false, the rest of the change made, a warning naming them, their token still 401; an administrator’s enable works', async () => {
    const held = await provisioned('scim-held');
    const t0 = Date.now();
    await admin(b).post(`${V2}/permissions/users/scim-held/disable`, {}).expect(200);
    await expectDead(t0, 'scim-held', held);

    const put = await profileSync(held.id, 'scim-held', 'Held By Admin');
    expect(put.status, put.text).toBe(200);
    expect(put.body).toMatchObject({ active: false, displayName: 'Held By Admin' });
    const patched = await scim(a).patch(`/Users/${held.id}`, [{ op: 'replace', path: 'active', value: true }]);
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body.active).toBe(false);
    const valueForm = await scim(a).patch(`/Users/${held.id}`, [{ op: 'replace', value: { active: true } }]);
    expect(valueForm.status, valueForm.text).toBe(200);
    expect(valueForm.body.active).toBe(false);
    // SCIM's own disable of them changes nothing either: the disable stays the administrator's.
    await scim(a).patch(`/Users/${held.id}`, [{ op: 'replace', path: 'active', value: false }]).expect(200);
    expect((await profileSync(held.id, 'scim-held', 'Held By Admin')).body.active).toBe(false);

    expect((await scim(b).get(`/Users/${held.id}`).expect(200)).body.active).toBe(false);
    expect(await stateOf('scim-held')).toEqual({ disabled: true, disabled_by: 'admin' });
    const warned = a.logs.filter((l) => l.includes('SCIM left the user disabled'));
    expect(warned.length).toBeGreaterThanOrEqual(3);
    expect(warned[0]).toContain('"user":"scim-held"');
    for (const line of warned) expect(line).not.toContain(scimToken);
    await sleep(600);
    for (const fg of [a, b]) {
      expect(await readWithToken(fg, 'scim-held', held.token)).toBe(401);
      expect(await readWithCookie(fg, held.cookie)).toBe(401);
    }
    // A token minted meanwhile proves nothing either, until an administrator enables them.
    const minted = (await admin(a).patch(`${V2}/permissions/users/access-token`, { username: 'scim-held' }).expect(200)).body.token as string;
    await sleep(600);
    for (const fg of [a, b]) expect(await readWithToken(fg, 'scim-held', minted)).toBe(401);

    const on = await admin(a).post(`${V2}/permissions/users/scim-held/enable`, {});
    expect(on.status, on.text).toBe(200);
    expect(on.body.user).toMatchObject({ disabled: false, disabled_by: null });
    await within(BOUND_MS, [a, b], async (fg) => (await readWithToken(fg, 'scim-held', minted)) === 200);
    expect((await profileSync(held.id, 'scim-held', 'Held By Admin')).body.active).toBe(true);
  });

  it('SCIM’s own disable round-trips; once an administrator disables the user too, SCIM’s enable no longer reaches them', async () => {
    const held = await provisioned('scim-own-off');
    const off = await scim(a).patch(`/Users/${held.id}`, [{ op: 'replace', path: 'active', value: false }]);
    expect(off.status, off.text).toBe(200);
    expect(off.body.active).toBe(false);
    expect(await stateOf('scim-own-off')).toEqual({ disabled: true, disabled_by: 'scim' });
    const on = await profileSync(held.id, 'scim-own-off', 'Own');
    expect(on.status, on.text).toBe(200);
    expect(on.body.active).toBe(true);
    expect(await stateOf('scim-own-off')).toEqual({ disabled: false, disabled_by: null });
    const minted = (await admin(a).patch(`${V2}/permissions/users/access-token`, { username: 'scim-own-off' }).expect(200)).body.token as string;
    await within(BOUND_MS, [a, b], async (fg) => (await readWithToken(fg, 'scim-own-off', minted)) === 200);

    // The identity provider disables them, then an administrator does too (the account is compromised, say).
    await scim(a).put(`/Users/${held.id}`, { schemas: [USER_SCHEMA], userName: 'scim-own-off', active: false }).expect(200);
    await admin(b).post(`${V2}/permissions/users/scim-own-off/disable`, {}).expect(200);
    expect(await stateOf('scim-own-off')).toEqual({ disabled: true, disabled_by: 'admin' });
    expect((await profileSync(held.id, 'scim-own-off', 'Own')).body.active).toBe(false);
    expect(await stateOf('scim-own-off')).toEqual({ disabled: true, disabled_by: 'admin' });
    await sleep(600);
    for (const fg of [a, b]) expect(await readWithToken(fg, 'scim-own-off', minted)).toBe(401);
  });
});

describe('the SCIM token', () => {
  it('no token, a wrong one, another scheme, or an administrator’s own credentials: 401 in SCIM’s shape, with a Bearer challenge, and nothing is created', async () => {
    const body = JSON.stringify({ schemas: [USER_SCHEMA], userName: 'scim-intruder' });
    const tries: Array<[string, string | undefined]> = [
      ['none', undefined],
      ['wrong', `Bearer ${'x'.repeat(scimToken.length)}`],
      ['prefix', `Bearer ${scimToken.slice(0, -1)}`],
      ['longer', `Bearer ${scimToken}x`],
      ['basic admin', adminAuth()],
      ['admin token as bearer', `Bearer ${'admin-token-0123456789abcdef0123456789abcdef'}`],
      ['token as basic', basic('scim', scimToken)],
    ];
    for (const [what, header] of tries) {
      const r = request(a.url).post('/scim/v2/Users').set('Content-Type', 'application/scim+json');
      const answered = await (header ? r.set('Authorization', header) : r).send(body);
      expect(answered.status, what).toBe(401);
      expect(answered.body.schemas, what).toEqual([ERROR_SCHEMA]);
      expect(answered.headers['www-authenticate'], what).toMatch(/^Bearer /);
      expect(answered.text, what).not.toContain(scimToken);
    }
    expect((await admin(a).get(`${V2}/permissions/users/scim-intruder`)).status).toBe(404);
    for (const fg of [a, b]) for (const line of fg.logs) expect(line).not.toContain(scimToken);
  });

  it('rotated: the new token works at once, the replaced one only within its grace, then 401', async () => {
    const old = scimToken;
    const next = 'scim-second-token-abcdef0123456789abcdef0123';
    writeFileSync(tokenFile, next);
    scimToken = next;
    // The file is looked at again at most once a second.
    await within(2000, [a], async (fg) => (await scim(fg, next).get('/ServiceProviderConfig')).status === 200);
    expect((await scim(a, old).get('/ServiceProviderConfig')).status).toBe(200);
    await sleep(GRACE_S * 1000 + 300);
    const late = await scim(a, old).get('/ServiceProviderConfig');
    expect(late.status).toBe(401);
    expect((await scim(a, next).get('/ServiceProviderConfig')).status).toBe(200);
  });
});

describe('rate limit', () => {
  it('a flood without the token, from the one address an ingress gives every client, gets 429 and never holds the identity provider back', async () => {
    const wrong = 'wrong-wrong-wrong-wrong-wrong-wrong-wrong';
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 20; i++) {
      const r = i % 2 ? await scim(b, wrong).get('/Users') : await request(b.url).post('/scim/v2/Users').set('Content-Type', 'application/scim+json').send(JSON.stringify({ schemas: [USER_SCHEMA], userName: `scim-anon-${i}` }));
      statuses.push(r.status);
      if (r.status === 429) {
        retryAfter = r.headers['retry-after'];
        expect(r.body.schemas).toEqual([ERROR_SCHEMA]);
      } else expect(r.status).toBe(401);
    }
    // b's bucket: 5, refilled at 0.5/s.
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(13);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // The identity provider, from the same address meanwhile: served, not 429.
    const idp = [
      await scim(b).get('/ServiceProviderConfig'),
      await scim(b).post('/Users', { schemas: [USER_SCHEMA], userName: 'scim-after-flood' }),
      await scim(b).get(`/Users?filter=${encodeURIComponent('userName eq "scim-after-flood"')}`),
    ];
    expect(idp.map((r) => r.status)).toEqual([200, 201, 200]);
    const gone = await scim(b).patch(`/Users/${idp[1]!.body.id}`, [{ op: 'replace', path: 'active', value: false }]);
    expect(gone.status, gone.text).toBe(200);
    // The flood is still held back, and made nothing.
    expect((await scim(b, wrong).get('/Users')).status).toBe(429);
    expect((await scim(a).get(`/Users?filter=${encodeURIComponent('userName sw "scim-anon-"')}`).expect(200)).body.totalResults).toBe(0);
  });

  it('the identity provider past its own burst gets 429 with Retry-After, and nothing is done', async () => {
    const statuses: number[] = [];
    let retryAfter: string | undefined;
    for (let i = 0; i < 12; i++) {
      const r = await scim(b).post('/Users', { schemas: [USER_SCHEMA], userName: `scim-flood-${i}` });
      statuses.push(r.status);
      if (r.status === 429) {
        retryAfter = r.headers['retry-after'];
        expect(r.body.schemas).toEqual([ERROR_SCHEMA]);
      } else expect(r.status, r.text).toBe(201);
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(6);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    const made = (await scim(a).get(`/Users?filter=${encodeURIComponent('userName sw "scim-flood-"')}`).expect(200)).body.totalResults as number;
    expect(made).toBe(statuses.filter((s) => s === 201).length);
    expect(made).toBeLessThanOrEqual(5);
  });
});

describe('what SCIM may not do', () => {
  it('cannot make an administrator, whatever it sends', async () => {
    const r = await scim(a).post('/Users', {
      schemas: [USER_SCHEMA, 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
      userName: 'scim-wannabe',
      roles: [{ value: 'admin', primary: true }],
      entitlements: [{ value: 'admin' }],
      is_admin: true,
      isAdmin: true,
      userType: 'Administrator',
      groups: [{ value: 'admins' }],
    });
    expect(r.status, r.text).toBe(201);
    const user = (await admin(a).get(`${V2}/permissions/users/scim-wannabe`).expect(200)).body.user;
    expect(user).toMatchObject({ is_admin: false, is_service_account: false, origin: 'scim' });
    await scim(a).patch(`/Users/${r.body.id}`, [{ op: 'add', value: { roles: [{ value: 'admin' }], is_admin: true } }]);
    expect((await admin(a).get(`${V2}/permissions/users/scim-wannabe`).expect(200)).body.user.is_admin).toBe(false);
  });

  it('never sees or touches the bootstrap admin: not listed, 404 by id, its name refused, and it still works', async () => {
    const adminId = String((await admin(a).get(`${V2}/permissions/users/admin`).expect(200)).body.user.id);
    const listed = (await scim(a).get(`/Users?filter=${encodeURIComponent('userName eq "admin"')}`).expect(200)).body;
    expect(listed.totalResults).toBe(0);
    expect((await scim(a).get(`/Users/${adminId}`)).status).toBe(404);
    expect((await scim(a).patch(`/Users/${adminId}`, [{ op: 'replace', path: 'active', value: false }])).status).toBe(404);
    expect((await scim(a).delete(`/Users/${adminId}`)).status).toBe(404);
    expect((await scim(a).post('/Users', { schemas: [USER_SCHEMA], userName: 'admin' })).status).toBe(409);
    const other = (await scim(a).post('/Users', { schemas: [USER_SCHEMA], userName: 'scim-rename-to-admin' }).expect(201)).body;
    const renamed = await scim(a).patch(`/Users/${other.id}`, [{ op: 'replace', path: 'userName', value: 'admin' }]);
    expect([400, 409]).toContain(renamed.status);
    const group = await scim(a).post('/Groups', { schemas: [GROUP_SCHEMA], displayName: 'scim-with-admin', members: [{ value: adminId }] });
    expect(group.status).toBe(400);
    const me = await request(a.url).get(`${V2}/permissions/users/current`).set('Authorization', adminAuth());
    expect(me.status).toBe(200);
    expect(me.body.user).toMatchObject({ username: 'admin', is_admin: true, disabled: false });
  });

  it('cannot rename, deactivate, reactivate or delete an administrator (403 in SCIM’s shape, logged), whom it still lists; the administrator keeps working on both flowgates', async () => {
    await admin(a).post(`${V2}/users/create`, { username: 'scim-boss', is_admin: true }).expect(201);
    const token = (await admin(a).patch(`${V2}/permissions/users/access-token`, { username: 'scim-boss' }).expect(200)).body.token as string;
    const listed = (await scim(a).get(`/Users?filter=${encodeURIComponent('userName eq "scim-boss"')}`).expect(200)).body;
    expect(listed.totalResults).toBe(1);
    const id = listed.Resources[0].id as string;
    const attempts: Array<[string, () => request.Test]> = [
      ['PUT userName', () => scim(a).put(`/Users/${id}`, { schemas: [USER_SCHEMA], userName: 'scim-boss-renamed' })],
      ['PATCH userName', () => scim(a).patch(`/Users/${id}`, [{ op: 'replace', path: 'userName', value: 'Scim-Boss' }])],
      ['PATCH active', () => scim(a).patch(`/Users/${id}`, [{ op: 'replace', path: 'active', value: false }])],
      ['PUT active', () => scim(a).put(`/Users/${id}`, { schemas: [USER_SCHEMA], userName: 'scim-boss', active: false })],
      ['DELETE', () => scim(a).delete(`/Users/${id}`)],
    ];
    for (const [what, attempt] of attempts) {
      const r = await attempt();
      expect(r.status, `${what}: ${r.text}`).toBe(403);
      expect(r.body.schemas, what).toEqual([ERROR_SCHEMA]);
      expect(r.body.detail, what).toContain('administrator');
    }
    expect(a.logs.some((l) => l.includes('SCIM refused: the user is a flowgate administrator'))).toBe(true);
    const after = (await admin(b).get(`${V2}/permissions/users/scim-boss`).expect(200)).body.user;
    expect(after).toMatchObject({ username: 'scim-boss', is_admin: true, disabled: false });
    await sleep(600);
    for (const fg of [a, b]) expect(await readWithToken(fg, 'scim-boss', token)).toBe(200);
    // What SCIM may set on them: what it shows, their display name and external id.
    const named = await scim(a).patch(`/Users/${id}`, [{ op: 'replace', path: 'displayName', value: 'The Boss' }]);
    expect(named.status, named.text).toBe(200);
    // Disabled by an administrator, they are not SCIM's to switch back on.
    await admin(a).post(`${V2}/permissions/users/scim-boss/disable`, {}).expect(200);
    expect((await scim(a).patch(`/Users/${id}`, [{ op: 'replace', path: 'active', value: true }])).status).toBe(403);
    expect((await admin(a).get(`${V2}/permissions/users/scim-boss`).expect(200)).body.user.disabled).toBe(true);
  });

  it('cannot rename a person an administrator made who awaits their first sign-in (400 mutability: the name decides who binds them); renames its own', async () => {
    await admin(a).post(`${V2}/users/create`, { username: 'scim-waiting', sign_in: 'oidc' }).expect(201);
    const id = (await scim(a).get(`/Users?filter=${encodeURIComponent('userName eq "scim-waiting"')}`).expect(200)).body.Resources[0].id as string;
    for (const r of [
      await scim(a).put(`/Users/${id}`, { schemas: [USER_SCHEMA], userName: 'scim-attacker' }),
      await scim(a).patch(`/Users/${id}`, [{ op: 'replace', path: 'userName', value: 'scim-attacker' }]),
    ]) {
      expect(r.status, r.text).toBe(400);
      expect(r.body).toMatchObject({ schemas: [ERROR_SCHEMA], scimType: 'mutability' });
    }
    expect((await admin(a).get(`${V2}/permissions/users/scim-waiting`).expect(200)).body.user).toMatchObject({ sign_in: 'oidc', oidc_linked: false });
    expect((await admin(a).get(`${V2}/permissions/users/scim-attacker`)).status).toBe(404);
    // One SCIM made is SCIM's to rename.
    const own = (await scim(a).post('/Users', { schemas: [USER_SCHEMA], userName: 'scim-own-waiting' }).expect(201)).body.id as string;
    expect((await scim(a).patch(`/Users/${own}`, [{ op: 'replace', path: 'userName', value: 'scim-own-renamed' }])).status).toBe(200);
  });

  it('cannot take over a group it did not make (which may hold grants): not listed, its name a 409, its members untouched', async () => {
    const listed = (await scim(a).get(`/Groups?filter=${encodeURIComponent('displayName eq "scim-readers"')}`).expect(200)).body;
    expect(listed.totalResults).toBe(0);
    expect((await scim(a).post('/Groups', { schemas: [GROUP_SCHEMA], displayName: 'scim-readers' })).status).toBe(409);
  });

  it('cannot create or rename a user or group into a name only the kubernetes issuer makes (any case): 400 invalidValue; the service account still joins its namespace group and reaches its grant', async () => {
    const refused = (r: request.Response, what: string, shape: string) => {
      expect(r.status, `${what}: ${r.text}`).toBe(400);
      expect(r.body, what).toMatchObject({ schemas: [ERROR_SCHEMA], scimType: 'invalidValue' });
      expect(r.body.detail, what).toContain(`has the shape of a Kubernetes ${shape}`);
    };
    const mallory = (await scim(a).post('/Users', { schemas: [USER_SCHEMA], userName: 'scim-mallory' }).expect(201)).body.id as string;
    for (const userName of ['k8s.team-a.pipelines', 'K8S.team-a.pipelines']) refused(await scim(a).post('/Users', { schemas: [USER_SCHEMA], userName }), `create ${userName}`, "service account's name");
    refused(await scim(a).put(`/Users/${mallory}`, { schemas: [USER_SCHEMA], userName: 'k8s.team-a.pipelines' }), 'PUT rename', "service account's name");
    refused(await scim(a).patch(`/Users/${mallory}`, [{ op: 'replace', path: 'userName', value: 'K8s.Team-A.Pipelines' }]), 'PATCH rename', "service account's name");
    for (const displayName of ['k8s:team-a', 'K8S:Team-A'])
      refused(await scim(a).post('/Groups', { schemas: [GROUP_SCHEMA], displayName, members: [{ value: mallory }] }), `create ${displayName}`, "namespace's group");
    const own = (await scim(a).post('/Groups', { schemas: [GROUP_SCHEMA], displayName: 'scim-mallory-team', members: [{ value: mallory }] }).expect(201)).body.id as string;
    refused(await scim(a).put(`/Groups/${own}`, { schemas: [GROUP_SCHEMA], displayName: 'k8s:team-a', members: [{ value: mallory }] }), 'PUT group rename', "namespace's group");
    refused(await scim(a).patch(`/Groups/${own}`, [{ op: 'replace', path: 'displayName', value: 'K8S:team-a' }]), 'PATCH group rename', "namespace's group");
    // Nothing was made or renamed.
    expect((await admin(a).get(`${V2}/permissions/users/k8s.team-a.pipelines`)).status).toBe(404);
    expect((await admin(a).get(`${V2}/permissions/users/scim-mallory`).expect(200)).body.user.username).toBe('scim-mallory');
    expect((await scim(a).get(`/Groups/${own}`).expect(200)).body.displayName).toBe('scim-mallory-team');

    // The administrator grants the namespace group (which this creates), as docs/machine-identity.md says to.
    const exp = (await admin(a).post(`${V2}/experiments/create`, { name: 'scim-k8s-team-a' }).expect(200)).body.experiment_id as string;
    await admin(a).post(`${V2}/permissions/groups/${encodeURIComponent('k8s:team-a')}/experiments/${exp}`, { permission: 'READ' }).expect(201);
    // The real service account of namespace team-a: its name is free, it joins its group, reaches the grant.
    const sa = `Bearer ${await signWith(clusterKey, serviceAccountClaims(CLUSTER, 'team-a', 'pipelines', CLUSTER_AUD))}`;
    const read = await request(a.url).get(`${V2}/experiments/get`).query({ experiment_id: exp }).set('Authorization', sa);
    expect(read.status, read.text).toBe(200);
    const saUser = (await admin(a).get(`${V2}/permissions/users/k8s.team-a.pipelines`).expect(200)).body.user;
    expect(saUser).toMatchObject({ is_service_account: true, origin: 'kubernetes' });
    const groupsOf = async (name: string) => JSON.stringify((await admin(a).get(`${V2}/permissions/users/${name}/groups`).expect(200)).body);
    expect(await groupsOf('k8s.team-a.pipelines')).toContain('k8s:team-a');
    // SCIM's user is in no namespace group, and holds nothing of it.
    expect(await groupsOf('scim-mallory')).not.toContain('k8s:team-a');
    const token = (await admin(a).patch(`${V2}/permissions/users/access-token`, { username: 'scim-mallory' }).expect(200)).body.token as string;
    expect((await request(a.url).get(`${V2}/experiments/get`).query({ experiment_id: exp }).set('Authorization', basic('scim-mallory', token))).status).toBe(403);
  });

  it('filters and ids are data: injection-shaped input matches nothing, changes nothing and never fails inside', async () => {
    const before = (await scim(a).get('/Users?count=200').expect(200)).body.totalResults as number;
    const filters = [
      `userName eq "x' OR '1'='1"`,
      `userName eq "x\\" or userName pr or \\"1"`,
      `id eq "1 or 1=1"`,
      `id eq "1; DROP TABLE users"`,
      `"1" eq "1"`,
      `__proto__ eq "x"`,
      `constructor.prototype eq "x"`,
      `userName eq "${'a'.repeat(5000)}"`,
      `externalId eq "%00"`,
    ];
    for (const filter of filters) {
      const r = await scim(a).get(`/Users?filter=${encodeURIComponent(filter)}`);
      expect([200, 400], filter).toContain(r.status);
      if (r.status === 200) expect(r.body.totalResults, filter).toBe(0);
      else expect(r.body.schemas, filter).toEqual([ERROR_SCHEMA]);
    }
    for (const id of ['1%20or%201=1', '0', '-1', '1e3', '%2e%2e', 'abc', '99999999999999999999']) {
      const r = await scim(a).get(`/Users/${id}`);
      expect([400, 404], id).toContain(r.status);
    }
    const bad = await scim(a).post('/Users', { schemas: [USER_SCHEMA], userName: "x'; DROP TABLE users; --" });
    expect(bad.status).toBe(400);
    expect((await scim(a).get('/Users?count=200').expect(200)).body.totalResults).toBe(before);
  });

  it('a body that is not JSON, or too large, is refused in SCIM’s shape', async () => {
    const notJson = await request(a.url).post('/scim/v2/Users').set('Authorization', `Bearer ${scimToken}`).set('Content-Type', 'application/scim+json').send('{"userName":');
    expect(notJson.status).toBe(400);
    expect(notJson.body.schemas).toEqual([ERROR_SCHEMA]);
    const huge = await request(a.url)
      .post('/scim/v2/Users')
      .set('Authorization', `Bearer ${scimToken}`)
      .set('Content-Type', 'application/scim+json')
      .send(JSON.stringify({ schemas: [USER_SCHEMA], userName: 'scim-huge', displayName: 'x'.repeat(2 * 1024 * 1024) }));
    expect(huge.status).toBe(413);
    expect((await admin(a).get(`${V2}/permissions/users/scim-huge`)).status).toBe(404);
  });
});
