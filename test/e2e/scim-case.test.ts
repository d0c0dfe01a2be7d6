import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, ADMIN, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { GROUP_SCHEMA, USER_SCHEMA, scimCalls } from '../helpers/scim.js';

/**
 * RFC 7643 marks User `userName` and Group `displayName` caseExact=false: identity providers (Okta,
 * Entra) look a user up with `userName eq "…"` in whatever case they hold, and a userName is unique
 * without regard to case. flowgate's SCIM answers so, in-process on the real store (MLflow stubbed:
 * SCIM never reaches it), while the rest of flowgate keeps matching names exactly.
 */
const TOKEN = 'scim-case-token-0123456789abcdef0123456789';

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let fg: TestFlowgate;
let dir = '';

const scim = () => scimCalls(fg.url, TOKEN);
const admin = {
  get: (path: string) => request(fg.url).get(`/api/2.0/mlflow${path}`).set('Authorization', adminAuth()),
  post: (path: string, body: object) => request(fg.url).post(`/api/2.0/mlflow${path}`).set('Authorization', adminAuth()).send(body),
};
const userNames = async (filter: string) =>
  ((await scim().get(`/Users?filter=${encodeURIComponent(filter)}`).expect(200)).body.Resources as { userName: string }[]).map((u) => u.userName).sort();
const groupNames = async (filter: string) =>
  ((await scim().get(`/Groups?filter=${encodeURIComponent(filter)}`).expect(200)).body.Resources as { displayName: string }[]).map((g) => g.displayName).sort();
const newUser = async (userName: string) => {
  const r = await scim().post('/Users', { schemas: [USER_SCHEMA], userName });
  expect(r.status, r.text).toBe(201);
  return r.body as { id: string; userName: string };
};
const userCount = async () => (await fg.store.sql.get<{ n: number }>('SELECT count(*) AS n FROM users'))!.n;

beforeAll(async () => {
  upstream = await startStubUpstream();
  dir = mkdtempSync(join(tmpdir(), 'flowgate-scim-case-'));
  writeFileSync(join(dir, 'scim-token'), TOKEN);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_SCIM_TOKEN_FILE: join(dir, 'scim-token'), FLOWGATE_SCIM_BURST: '10000', FLOWGATE_SCIM_RATE_PER_SECOND: '1000' }, dir);
  await newUser('case-alice');
  await newUser('case-albert');
}, 60_000);

afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (dir) removeDir(dir);
});

describe('SCIM userName filters ignore case', () => {
  it('eq finds the user whatever case the identity provider sends', async () => {
    expect(await userNames('userName eq "case-alice"')).toEqual(['case-alice']);
    expect(await userNames('userName eq "Case-Alice"')).toEqual(['case-alice']);
    expect(await userNames('USERNAME eq "CASE-ALICE"')).toEqual(['case-alice']);
    expect(await userNames('userName eq "CASE-NOBODY"')).toEqual([]);
  });

  it('ne, co, sw and ew ignore case too, alone and joined with other attributes', async () => {
    expect(await userNames('userName sw "CASE-AL"')).toEqual(['case-albert', 'case-alice']);
    expect(await userNames('userName co "LIC"')).toEqual(['case-alice']);
    expect(await userNames('userName ew "ERT"')).toEqual(['case-albert']);
    expect(await userNames('userName sw "case-" and userName ne "CASE-ALICE"')).toEqual(['case-albert']);
    expect(await userNames('not (userName eq "Case-Albert") and userName sw "Case"')).toEqual(['case-alice']);
    expect(await userNames('userName eq "CASE-ALICE" and active eq true')).toEqual(['case-alice']);
    // An attribute RFC 7643 marks caseExact=true (externalId) still compares exactly.
    const albert = (await scim().get(`/Users?filter=${encodeURIComponent('userName eq "case-albert"')}`).expect(200)).body.Resources[0].id as string;
    await scim().put(`/Users/${albert}`, { schemas: [USER_SCHEMA], userName: 'case-albert', externalId: 'Ext-Albert' }).expect(200);
    expect(await userNames('externalId eq "Ext-Albert"')).toEqual(['case-albert']);
    expect(await userNames('externalId eq "ext-albert"')).toEqual([]);
  });

  it('finds a user an administrator made, and still never the bootstrap admin', async () => {
    await admin.post('/users/create', { username: 'Case-Bob', sign_in: 'local' }).expect(201);
    expect(await userNames('userName eq "case-bob"')).toEqual(['Case-Bob']);
    expect(await userNames(`userName eq "${ADMIN.username.toUpperCase()}"`)).toEqual([]);
  });
});

describe('SCIM userName is unique without regard to case', () => {
  it('creating Alice while alice exists is a 409 uniqueness, and nothing is made', async () => {
    const before = await userCount();
    for (const taken of ['Case-Alice', 'CASE-ALICE', 'case-BOB', ADMIN.username.toUpperCase()]) {
      const r = await scim().post('/Users', { schemas: [USER_SCHEMA], userName: taken });
      expect(r.status, `${taken}: ${r.text}`).toBe(409);
      expect(r.body.scimType).toBe('uniqueness');
    }
    expect(await userCount()).toBe(before);
  });

  it('a rename onto another user’s name in other case is refused; a user may change the case of its own name', async () => {
    const carol = await newUser('case-carol');
    const renamed = await scim().put(`/Users/${carol.id}`, { schemas: [USER_SCHEMA], userName: 'CASE-ALICE' });
    expect(renamed.status, renamed.text).toBe(409);
    expect(renamed.body.scimType).toBe('uniqueness');
    const own = await scim().put(`/Users/${carol.id}`, { schemas: [USER_SCHEMA], userName: 'Case-Carol' });
    expect(own.status, own.text).toBe(200);
    expect(own.body.userName).toBe('Case-Carol');
  });

  it('the rest of flowgate still matches names exactly', async () => {
    // The administrator's user page and sign-in by name look the stored spelling up, not another case.
    expect((await admin.get('/permissions/users/case-alice')).status).toBe(200);
    expect((await admin.get('/permissions/users/Case-Alice')).status).toBe(404);
    // Names an administrator gives may still differ only in case (no index forbids it).
    await admin.post('/users/create', { username: 'case-bob', sign_in: 'local' }).expect(201);
    expect(await userNames('userName eq "CASE-BOB"')).toEqual(['Case-Bob', 'case-bob']);
  });
});

describe('SCIM Group displayName filters ignore case', () => {
  it('eq, ne, co, sw and ew find the group whatever the case', async () => {
    for (const displayName of ['Case-Data-Science', 'case-platform'])
      expect((await scim().post('/Groups', { schemas: [GROUP_SCHEMA], displayName })).status).toBe(201);
    expect(await groupNames('displayName eq "case-data-science"')).toEqual(['Case-Data-Science']);
    expect(await groupNames('displayName eq "CASE-PLATFORM"')).toEqual(['case-platform']);
    expect(await groupNames('displayName sw "CASE-"')).toEqual(['Case-Data-Science', 'case-platform']);
    expect(await groupNames('displayName co "SCIENCE"')).toEqual(['Case-Data-Science']);
    expect(await groupNames('displayName ew "Form"')).toEqual(['case-platform']);
    expect(await groupNames('displayName sw "case" and displayName ne "Case-Platform"')).toEqual(['Case-Data-Science']);
  });
});
