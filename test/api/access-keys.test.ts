import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  for (const [username, isServiceAccount] of [
    ['carol', false],
    ['dave', false],
    ['pipeline', true],
  ] as const) {
    const created = await api()
      .post('/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .send({ username, display_name: username, is_admin: false, is_service_account: isServiceAccount });
    expect(created.status).toBe(201);
  }
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const api = () => request(fg.url);
const keysOf = (username: string) => `/api/2.0/mlflow/permissions/users/${username}/access-keys`;
/** 200 when the credential works, 401 when it does not. */
const works = async (username: string, token: string) => (await api().get('/api/2.0/mlflow/users/current').set('Authorization', basic(username, token))).status;

async function createKey(username: string, name: string, auth = adminAuth(), expiration?: string) {
  return api()
    .post(keysOf(username))
    .set('Authorization', auth)
    .send({ name, ...(expiration ? { expiration } : {}) });
}
async function mintUnnamed(username: string) {
  const res = await api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username });
  expect(res.status).toBe(200);
  return res.body.token as string;
}

describe('named access keys of a person', () => {
  it('holds several keys beside the unnamed token, lists them without tokens, and revokes one at a time', async () => {
    const unnamed = await mintUnnamed('carol');
    const laptop = await createKey('carol', 'laptop');
    expect(laptop.status).toBe(201);
    expect(laptop.body).toMatchObject({ username: 'carol', name: 'laptop', token: expect.stringMatching(/^fgt_/) });
    const laptopToken = laptop.body.token as string;
    // carol creates her second key herself.
    const notebook = await createKey('carol', 'notebook', basic('carol', laptopToken), new Date(Date.now() + 7 * 86_400_000).toISOString());
    expect(notebook.status).toBe(201);
    const notebookToken = notebook.body.token as string;

    expect(await works('carol', unnamed)).toBe(200);
    expect(await works('carol', laptopToken)).toBe(200);
    expect(await works('carol', notebookToken)).toBe(200);

    const listed = await api().get(keysOf('carol')).set('Authorization', basic('carol', notebookToken));
    expect(listed.status).toBe(200);
    expect(listed.body.access_keys.map((k: { name: string }) => k.name)).toEqual(['laptop', 'notebook']);
    for (const key of listed.body.access_keys) expect(Object.keys(key).sort()).toEqual(['created_at', 'expires_at', 'name']);
    expect(JSON.stringify(listed.body)).not.toContain('fgt_');

    const revoked = await api().delete(`${keysOf('carol')}/laptop`).set('Authorization', basic('carol', notebookToken));
    expect(revoked.status).toBe(200);
    expect(await works('carol', laptopToken)).toBe(401);
    expect(await works('carol', notebookToken)).toBe(200);
    expect(await works('carol', unnamed)).toBe(200);
    const after = await api().get(keysOf('carol')).set('Authorization', adminAuth());
    expect(after.body.access_keys.map((k: { name: string }) => k.name)).toEqual(['notebook']);

    // The name is free again once its key is revoked.
    expect((await createKey('carol', 'laptop')).status).toBe(201);
  });

  it('keeps the PATCH access-token rule: a new unnamed token replaces the previous unnamed one, named keys stay', async () => {
    const key = await createKey('dave', 'ci');
    const first = await mintUnnamed('dave');
    const second = await mintUnnamed('dave');
    expect(await works('dave', first)).toBe(401);
    expect(await works('dave', second)).toBe(200);
    expect(await works('dave', key.body.token as string)).toBe(200);
  });

  it('refuses a name already held by a live key, and answers 404 for an unknown one', async () => {
    expect((await createKey('dave', 'dup')).status).toBe(201);
    const again = await createKey('dave', 'dup');
    expect(again.status).toBe(409);
    expect(again.body.error_code).toBe('RESOURCE_ALREADY_EXISTS');
    const missing = await api().delete(`${keysOf('dave')}/nope`).set('Authorization', adminAuth());
    expect(missing.status).toBe(404);
    expect(missing.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
  });

  it('validates names and expirations before writing anything', async () => {
    const before = (await api().get(keysOf('dave')).set('Authorization', adminAuth())).body.access_keys.length;
    for (const name of ['', '-lead', 'a/b', 'x'.repeat(65)]) expect((await createKey('dave', name)).status, name).toBe(400);
    expect((await createKey('dave', 'past', adminAuth(), '2001-01-01T00:00:00Z')).status).toBe(400);
    expect((await api().get(keysOf('dave')).set('Authorization', adminAuth())).body.access_keys).toHaveLength(before);
  });

  it('is self or admin only: another user may not list, create or revoke', async () => {
    const carolKey = (await createKey('carol', 'probe')).body.token as string;
    expect((await api().get(keysOf('dave')).set('Authorization', basic('carol', carolKey))).status).toBe(403);
    expect((await createKey('dave', 'sneaky', basic('carol', carolKey))).status).toBe(403);
    expect((await api().delete(`${keysOf('dave')}/ci`).set('Authorization', basic('carol', carolKey))).status).toBe(403);
    expect((await api().get(keysOf('dave')).set('Authorization', adminAuth())).body.access_keys.map((k: { name: string }) => k.name)).toContain('ci');
  });

  it('DELETE access-token still revokes everything the user holds, named keys included', async () => {
    await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'erin', display_name: 'Erin' });
    const unnamed = await mintUnnamed('erin');
    const key = (await createKey('erin', 'laptop')).body.token as string;
    const res = await api().delete('/api/2.0/mlflow/permissions/users/erin/access-token').set('Authorization', adminAuth());
    expect(res.status).toBe(200);
    expect(res.body.revoked).toBe(2);
    expect(await works('erin', unnamed)).toBe(401);
    expect(await works('erin', key)).toBe(401);
    expect((await api().get(keysOf('erin')).set('Authorization', adminAuth())).body.access_keys).toEqual([]);
  });

  it('audits creation and revocation without the token', async () => {
    const rows = (await fg.store.sql.all("SELECT action, old_value, new_value FROM audit_log WHERE target = 'user:carol' AND action IN ('token.issue', 'token.revoke')")) as { action: string; old_value: string | null; new_value: string | null }[];
    expect(rows.some((r) => r.action === 'token.issue' && r.new_value?.includes('"name":"laptop"'))).toBe(true);
    expect(rows.some((r) => r.action === 'token.revoke' && r.old_value?.includes('"name":"laptop"'))).toBe(true);
    expect(JSON.stringify(rows)).not.toContain('fgt_');
  });
});

describe('a service account', () => {
  it('holds one token: a new key, named or not, revokes the previous one', async () => {
    const first = await createKey('pipeline', 'deploy');
    expect(first.status).toBe(201);
    const second = await createKey('pipeline', 'deploy-2');
    expect(second.status).toBe(201);
    expect(await works('pipeline', first.body.token as string)).toBe(401);
    expect(await works('pipeline', second.body.token as string)).toBe(200);
    const listed = await api().get(keysOf('pipeline')).set('Authorization', adminAuth());
    expect(listed.body.access_keys.map((k: { name: string }) => k.name)).toEqual(['deploy-2']);

    const unnamed = await mintUnnamed('pipeline');
    expect(await works('pipeline', second.body.token as string)).toBe(401);
    expect(await works('pipeline', unnamed)).toBe(200);
    expect((await api().get(keysOf('pipeline')).set('Authorization', adminAuth())).body.access_keys).toEqual([]);
  });
});
