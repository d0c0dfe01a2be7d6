import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../src/http/rate-limit.js';
import { singleEquality } from '../../src/scim/shapes.js';
import { createScimToken } from '../../src/scim/token-file.js';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { GROUP_SCHEMA, USER_SCHEMA, scimCalls } from '../helpers/scim.js';

/**
 * SCIM's mapping onto flowgate's users and groups, in-process (MLflow stubbed: SCIM never reaches
 * it): filters, PATCH add/replace/remove (members and `active` included), paging, ETags, and the
 * token file's rotation and the rate limiter on their own clocks.
 */
const TOKEN = 'scim-token-0123456789abcdef0123456789abcdef';

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let fg: TestFlowgate;
let dir = '';

const scim = () => scimCalls(fg.url, TOKEN);
const adminGet = (path: string) => request(fg.url).get(`/api/2.0/mlflow${path}`).set('Authorization', adminAuth());
const newUser = async (userName: string, extra: object = {}) => {
  const r = await scim().post('/Users', { schemas: [USER_SCHEMA], userName, ...extra });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; userName: string; active: boolean; meta: { version: string; location: string } };
};

beforeAll(async () => {
  upstream = await startStubUpstream();
  dir = mkdtempSync(join(tmpdir(), 'flowgate-scim-'));
  writeFileSync(join(dir, 'scim-token'), TOKEN);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_SCIM_TOKEN_FILE: join(dir, 'scim-token'), FLOWGATE_SCIM_BURST: '10000', FLOWGATE_SCIM_RATE_PER_SECOND: '1000' }, dir);
}, 60_000);

afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  removeDir(dir);
});

describe('SCIM Users', () => {
  it('a created user is a flowgate person of origin scim, with the externalId kept and no admin flag', async () => {
    const made = await newUser('sc-alice', { displayName: 'Alice A', externalId: 'idp-alice', emails: [{ value: 'a@example.com' }], name: { givenName: 'Alice' } });
    expect(made).toMatchObject({ userName: 'sc-alice', displayName: 'Alice A', externalId: 'idp-alice', active: true });
    // Attributes flowgate keeps nothing of are not echoed back as if stored.
    expect(made).not.toHaveProperty('emails');
    expect(made.meta.version).toMatch(/^W\/"/);
    const flowgate = (await adminGet('/permissions/users/sc-alice').expect(200)).body.user;
    expect(flowgate).toMatchObject({ username: 'sc-alice', display_name: 'Alice A', origin: 'scim', disabled: false, is_admin: false, is_service_account: false });
  });

  it('a displayName with control characters (a NUL PostgreSQL refuses, escapes, line breaks) is stored without them, on create and replace', async () => {
    const made = await newUser('ctl-ann', { displayName: 'Ann\u0000\u001b[31m\nB' });
    expect((made as { displayName?: string }).displayName).toBe('Ann[31mB');
    const replaced = await scim().patch(`/Users/${made.id}`, [{ op: 'replace', path: 'displayName', value: '\u0007Zoe\u007f' }]);
    expect(replaced.status, replaced.text).toBe(200);
    expect((await adminGet('/permissions/users/ctl-ann').expect(200)).body.user.display_name).toBe('Zoe');
  });

  it('filters by userName, externalId, displayName and id (and combinations), and refuses a malformed filter in SCIM’s error shape', async () => {
    const bob = await newUser('sc-bob', { displayName: 'Bob B', externalId: 'idp-bob' });
    const names = async (filter: string) => ((await scim().get(`/Users?filter=${encodeURIComponent(filter)}`).expect(200)).body.Resources as { userName: string }[]).map((u) => u.userName);
    expect(await names('userName eq "sc-bob"')).toEqual(['sc-bob']);
    expect(await names('externalId eq "idp-bob"')).toEqual(['sc-bob']);
    expect(await names('displayName eq "Bob B"')).toEqual(['sc-bob']);
    expect(await names(`id eq "${bob.id}"`)).toEqual(['sc-bob']);
    expect(await names('userName eq "nobody-here"')).toEqual([]);
    expect((await names('userName sw "sc-" and displayName co "B"')).sort()).toEqual(['sc-bob']);
    for (const malformed of ['userName xx "a"', '(userName eq "a"']) {
      const bad = await scim().get(`/Users?filter=${encodeURIComponent(malformed)}`);
      expect(bad.status, malformed).toBe(400);
      expect(bad.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '400', scimType: 'invalidFilter' });
    }
  });

  it('never shows the bootstrap admin or service accounts, and a duplicate userName is a 409 uniqueness', async () => {
    const all = (await scim().get('/Users?count=200').expect(200)).body.Resources as { userName: string }[];
    expect(all.map((u) => u.userName)).not.toContain('admin');
    const dup = await scim().post('/Users', { schemas: [USER_SCHEMA], userName: 'sc-alice' });
    expect(dup.status).toBe(409);
    expect(dup.body.scimType).toBe('uniqueness');
  });

  it('pages with startIndex and count, totalResults the whole match', async () => {
    for (const n of ['sc-p1', 'sc-p2', 'sc-p3']) await newUser(n);
    const page = (await scim().get(`/Users?filter=${encodeURIComponent('userName sw "sc-p"')}&startIndex=2&count=1&sortBy=userName`).expect(200)).body;
    expect(page).toMatchObject({ totalResults: 3, startIndex: 2, itemsPerPage: 1 });
    expect(page.Resources.map((u: { userName: string }) => u.userName)).toEqual(['sc-p2']);
  });

  it('PATCH replace of displayName and active, add of externalId, remove of externalId', async () => {
    const u = await newUser('sc-patch');
    const replaced = await scim().patch(`/Users/${u.id}`, [{ op: 'replace', value: { displayName: 'Patched' } }, { op: 'add', path: 'externalId', value: 'idp-patch' }]);
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toMatchObject({ displayName: 'Patched', externalId: 'idp-patch', active: true });
    const off = await scim().patch(`/Users/${u.id}`, [{ op: 'replace', path: 'active', value: false }]);
    expect(off.body.active).toBe(false);
    expect((await adminGet('/permissions/users/sc-patch').expect(200)).body.user.disabled).toBe(true);
    const on = await scim().patch(`/Users/${u.id}`, [{ op: 'replace', value: { active: true } }]);
    expect(on.body.active).toBe(true);
    const removed = await scim().patch(`/Users/${u.id}`, [{ op: 'remove', path: 'externalId' }]);
    expect(removed.body).not.toHaveProperty('externalId');
  });

  it('PATCH active as the string "False" / "True" (Entra ID sends it so) disables and enables as the boolean would; another string is still a 400', async () => {
    const u = await newUser('sc-entra');
    const off = await scim().patch(`/Users/${u.id}`, [{ op: 'Replace', path: 'active', value: 'False' }]);
    expect(off.status, off.text).toBe(200);
    expect(off.body.active).toBe(false);
    expect((await adminGet('/permissions/users/sc-entra').expect(200)).body.user).toMatchObject({ disabled: true, disabled_by: 'scim' });
    const on = await scim().patch(`/Users/${u.id}`, [{ op: 'Replace', value: { active: 'True', displayName: 'Entra' } }]);
    expect(on.status, on.text).toBe(200);
    expect(on.body).toMatchObject({ active: true, displayName: 'Entra' });
    const lower = await scim().patch(`/Users/${u.id}`, [{ op: 'replace', path: 'active', value: 'false' }]);
    expect(lower.status, lower.text).toBe(200);
    expect(lower.body.active).toBe(false);
    const odd = await scim().patch(`/Users/${u.id}`, [{ op: 'replace', path: 'active', value: 'no' }]);
    expect(odd.status).toBe(400);
    expect(odd.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], scimType: 'invalidValue' });
    expect((await adminGet('/permissions/users/sc-entra').expect(200)).body.user.disabled).toBe(true);
  });

  it('ETags: a GET carries the version, If-None-Match answers 304, a stale If-Match is a 412 that changes nothing', async () => {
    const u = await newUser('sc-etag');
    const got = await scim().get(`/Users/${u.id}`).expect(200);
    const etag = String(got.headers.etag);
    expect(etag).toBe(u.meta.version);
    expect((await scim().get(`/Users/${u.id}`).set('If-None-Match', etag)).status).toBe(304);
    await scim().patch(`/Users/${u.id}`, [{ op: 'replace', value: { displayName: 'Changed' } }]).expect(200);
    const stale = await scim().put(`/Users/${u.id}`, { schemas: [USER_SCHEMA], userName: 'sc-etag', displayName: 'Lost update' }).set('If-Match', etag);
    expect(stale.status).toBe(412);
    expect((await scim().get(`/Users/${u.id}`).expect(200)).body.displayName).toBe('Changed');
  });

  it('PUT renames; DELETE removes the user (404 after)', async () => {
    const u = await newUser('sc-rename');
    const put = await scim().put(`/Users/${u.id}`, { schemas: [USER_SCHEMA], userName: 'sc-renamed', displayName: 'R' });
    expect(put.status, put.text).toBe(200);
    expect(put.body.userName).toBe('sc-renamed');
    await adminGet('/permissions/users/sc-renamed').expect(200);
    await scim().delete(`/Users/${u.id}`).expect(204);
    expect((await scim().get(`/Users/${u.id}`)).status).toBe(404);
    expect((await adminGet('/permissions/users/sc-renamed')).status).toBe(404);
  });
});

describe('SCIM Groups', () => {
  it('a group with members, PATCH add/remove of members, and the members’ flowgate memberships follow', async () => {
    const c = await newUser('sc-carol');
    const d = await newUser('sc-dave');
    const g = await scim().post('/Groups', { schemas: [GROUP_SCHEMA], displayName: 'sc-team', externalId: 'idp-team', members: [{ value: c.id }] });
    expect(g.status, g.text).toBe(201);
    expect(g.body.members.map((m: { value: string }) => m.value)).toEqual([c.id]);
    const added = await scim().patch(`/Groups/${g.body.id}`, [{ op: 'add', path: 'members', value: [{ value: d.id }] }]);
    expect(added.status, added.text).toBe(200);
    expect(added.body.members.map((m: { value: string }) => m.value).sort()).toEqual([c.id, d.id].sort());
    expect((await adminGet('/permissions/users/sc-dave').expect(200)).body.user.groups).toEqual(['sc-team']);
    const removed = await scim().patch(`/Groups/${g.body.id}`, [{ op: 'remove', path: `members[value eq "${c.id}"]` }]);
    expect(removed.body.members.map((m: { value: string }) => m.value)).toEqual([d.id]);
    expect((await adminGet('/permissions/users/sc-carol').expect(200)).body.user.groups).toEqual([]);
    const user = (await scim().get(`/Users/${d.id}`).expect(200)).body;
    expect(user.groups.map((x: { display: string }) => x.display)).toEqual(['sc-team']);
    const byName = (await scim().get(`/Groups?filter=${encodeURIComponent('displayName eq "sc-team"')}`).expect(200)).body;
    expect(byName.totalResults).toBe(1);
    await scim().delete(`/Groups/${g.body.id}`).expect(204);
    expect((await adminGet('/permissions/users/sc-dave').expect(200)).body.user.groups).toEqual([]);
  });

  it('groups not made by SCIM are not SCIM’s: not listed, not changed, and their name is a 409', async () => {
    await request(fg.url).post('/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth()).send({ group_name: 'sc-local' }).expect(201);
    const listed = (await scim().get(`/Groups?filter=${encodeURIComponent('displayName eq "sc-local"')}`).expect(200)).body;
    expect(listed.totalResults).toBe(0);
    const taken = await scim().post('/Groups', { schemas: [GROUP_SCHEMA], displayName: 'sc-local' });
    expect(taken.status).toBe(409);
  });

  it('a member that is no SCIM-visible user (the bootstrap admin, an unknown id) is refused and nothing changes', async () => {
    const adminId = String((await adminGet('/permissions/users/admin').expect(200)).body.user.id);
    for (const value of [adminId, '999999', '1 or 1=1']) {
      const r = await scim().post('/Groups', { schemas: [GROUP_SCHEMA], displayName: 'sc-bad', members: [{ value }] });
      expect(r.status, value).toBe(400);
    }
    expect((await scim().get(`/Groups?filter=${encodeURIComponent('displayName eq "sc-bad"')}`).expect(200)).body.totalResults).toBe(0);
  });
});

describe('discovery', () => {
  it('ServiceProviderConfig says PATCH, filter, sort and ETags; Schemas publish only the User attributes kept', async () => {
    const spc = (await scim().get('/ServiceProviderConfig').expect(200)).body;
    expect(spc).toMatchObject({ patch: { supported: true }, filter: { supported: true }, etag: { supported: true }, bulk: { supported: false } });
    const types = (await scim().get('/ResourceTypes').expect(200)).body.Resources.map((r: { name: string }) => r.name).sort();
    expect(types).toEqual(['Group', 'User']);
    const user = (await scim().get(`/Schemas/${USER_SCHEMA}`).expect(200)).body;
    const attrs = user.attributes.map((a: { name: string }) => a.name);
    expect(attrs).toEqual(expect.arrayContaining(['userName', 'displayName', 'active', 'groups']));
    expect(attrs).not.toContain('emails');
  });
});

describe('building blocks', () => {
  it('singleEquality reads only a lone eq comparison', async () => {
    const { default: SCIMMY } = await import('scimmy');
    const f = (e: string) => new SCIMMY.Types.Filter(e) as unknown as Parameters<typeof singleEquality>[0];
    expect(singleEquality(f('userName eq "a"'))).toEqual({ attribute: 'username', value: 'a' });
    expect(singleEquality(f('userName eq "a" or userName eq "b"'))).toBeUndefined();
    expect(singleEquality(f('userName eq "a" and active eq true'))).toBeUndefined();
    expect(singleEquality(f('userName co "a"'))).toBeUndefined();
  });

  it('the token file: a rewrite takes effect, the replaced token lasts its grace only, a short rewrite is ignored', () => {
    const d = mkdtempSync(join(tmpdir(), 'scim-token-'));
    const file = join(d, 't');
    let now = 1_000_000;
    const first = 'a'.repeat(40);
    const second = 'b'.repeat(40);
    writeFileSync(file, first);
    const t = createScimToken({ file, graceMs: 60_000, recheckMs: 0, now: () => now });
    expect(t.accepts(first)).toBe(true);
    expect(t.accepts(second)).toBe(false);
    writeFileSync(file, `${second}\n`);
    now += 10;
    expect(t.accepts(second)).toBe(true);
    expect(t.accepts(first)).toBe(true);
    now += 60_001;
    expect(t.accepts(first)).toBe(false);
    writeFileSync(file, 'short');
    now += 10;
    expect(t.accepts(second)).toBe(true);
    expect(t.accepts('short')).toBe(false);
    removeDir(d);
  });

  it('the rate limiter: a burst, then a wait in whole seconds, refilled over time, per client', () => {
    let now = 0;
    const l = createRateLimiter({ perSecond: 2, burst: 3, now: () => now });
    expect([l.take('x'), l.take('x'), l.take('x')]).toEqual([0, 0, 0]);
    expect(l.take('x')).toBe(1);
    expect(l.take('y')).toBe(0);
    now += 500;
    expect(l.take('x')).toBe(0);
  });
});
