import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const batch = (calls: unknown[], auth = adminAuth()) => request(fg.url).post('/api/2.0/mlflow/permissions/batch').set('Authorization', auth).send({ calls });
const count = async (table: string) => ((await fg.store.sql.get(`SELECT count(*) AS n FROM ${table}`)) as { n: number }).n;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('POST permissions/batch (several admin changes, all or none)', () => {
  it('applies every call in order, each checked like a request of its own', async () => {
    const res = await batch([
      { method: 'POST', path: 'users/create', body: { username: 'bea' } },
      { method: 'POST', path: 'permissions/groups', body: { group_name: 'team-b' } },
      { method: 'POST', path: 'permissions/groups/team-b/users', body: { username: 'bea' } },
      { method: 'POST', path: 'permissions/groups/team-b/experiments/7', body: { permission: 'EDIT' } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toHaveLength(4);
    const grant = await request(fg.url).get('/api/2.0/mlflow/permissions/groups/team-b/experiments/7').set('Authorization', adminAuth());
    expect(grant.body.permission.permission).toBe('EDIT');
  });

  it('changes nothing, audit log included, when one call is refused, and says which', async () => {
    const before = { users: await count('users'), groups: await count('groups'), grants: await count('grants'), audit: await count('audit_log') };
    const res = await batch([
      { method: 'POST', path: 'users/create', body: { username: 'cleo' } },
      { method: 'POST', path: 'permissions/users/cleo/experiments/8', body: { permission: 'READ' } },
      { method: 'POST', path: 'permissions/users/nobody-here/experiments/8', body: { permission: 'READ' } },
    ]);
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
    expect(res.body.message).toMatch(/^Call 2: User 'nobody-here'/);
    expect({ users: await count('users'), groups: await count('groups'), grants: await count('grants'), audit: await count('audit_log') }).toEqual(before);
    // Nothing written and undone stayed in memory: cleo cannot be found and holds nothing.
    expect((await request(fg.url).get('/api/2.0/mlflow/permissions/users/cleo').set('Authorization', adminAuth())).status).toBe(404);
  });

  it('refuses unknown endpoints, nested batches and bad bodies by position, and non-admins', async () => {
    expect((await batch([{ method: 'POST', path: 'permissions/nowhere', body: {} }])).body.message).toMatch(/^Call 0: no admin endpoint/);
    expect((await batch([{ method: 'POST', path: 'permissions/batch', body: { calls: [] } }])).status).toBe(400);
    const bad = await batch([{ method: 'POST', path: 'permissions/groups/team-b/experiments/9', body: { permission: 'WRITE' } }]);
    expect(bad.status).toBe(400);
    await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'dana' });
    const token = (
      await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'dana' })
    ).body.token as string;
    expect((await batch([{ method: 'POST', path: 'permissions/groups', body: { group_name: 'x' } }], basic('dana', token))).status).toBe(403);
  });
});
