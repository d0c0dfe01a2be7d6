import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seedScale } from '../../bench/seed-scale.mjs';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * The admin API routes the Manage screens call (issue 23): users/current as MLflow's basic-auth
 * answers it, a resource's grants and each user's effective permission with its reason, the
 * caller's own permissions, searchable and paged directories, the filtered audit log; and that the
 * first page of each stays fast over 10k users, 1k groups and 100k grants.
 */
let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const tokens: Record<string, string> = {};
const api = () => request(fg.url);
const as = (u: string) => (u === 'admin' ? adminAuth() : basic(u, tokens[u]!));
const get = (path: string, u = 'admin') => api().get(`/ajax-api/2.0/mlflow/${path}`).set('Authorization', as(u));
const post = (path: string, body: unknown) => api().post(`/api/2.0/mlflow/${path}`).set('Authorization', adminAuth()).send(body as object);

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DEFAULT_PERMISSION: 'READ' });
  for (const [username, extra] of [
    ['mia', {}],
    ['ned', {}],
    ['ola', {}],
    ['robot', { is_service_account: true }],
  ] as const) {
    await post('users/create', { username, ...extra }).expect(201);
    tokens[username] = (await api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username })).body.token;
  }
  for (const g of ['readers', 'blocked']) await post('permissions/groups', { group_name: g }).expect(201);
  await post('permissions/groups/readers/users', { username: 'ned' }).expect(201);
  await post('permissions/groups/readers/users', { username: 'ola' }).expect(201);
  await post('permissions/groups/blocked/users', { username: 'ola' }).expect(201);
  await post('permissions/users/mia/experiments/7', { permission: 'MANAGE' }).expect(201);
  await post('permissions/users/robot/experiments/7', { permission: 'EDIT' }).expect(201);
  await post('permissions/groups/readers/experiments/7', { permission: 'EDIT' }).expect(201);
  await post('permissions/groups/blocked/experiments/7', { permission: 'NO_PERMISSIONS' }).expect(201);
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

describe('users/current', () => {
  it('answers on both prefixes in the shape of MLflow’s basic-auth app', async () => {
    for (const prefix of ['/api/2.0', '/ajax-api/2.0']) {
      const r = await api().get(`${prefix}/mlflow/users/current`).set('Authorization', as('mia')).expect(200);
      expect(r.body).toEqual({ user: { id: expect.any(Number), username: 'mia', is_admin: false }, is_basic_auth: false });
    }
    expect((await api().get('/api/2.0/mlflow/users/current')).status).toBe(401);
  });
});

describe("a resource's grants and effective permissions", () => {
  it('lists users, service accounts and groups (groups last), searchable and paged', async () => {
    const all = await get('permissions/ui/experiments/7/grants', 'mia').expect(200);
    expect(all.body.grants).toEqual([
      { grantee_type: 'user', name: 'mia', permission: 'MANAGE' },
      { grantee_type: 'service_account', name: 'robot', permission: 'EDIT' },
      { grantee_type: 'group', name: 'blocked', permission: 'NO_PERMISSIONS' },
      { grantee_type: 'group', name: 'readers', permission: 'EDIT' },
    ]);
    const first = await get('permissions/ui/experiments/7/grants?max_results=3').expect(200);
    expect(first.body.grants).toHaveLength(3);
    const second = await get(`permissions/ui/experiments/7/grants?max_results=3&page_token=${first.body.next_page_token}`).expect(200);
    expect(second.body).toEqual({ grants: [{ grantee_type: 'group', name: 'readers', permission: 'EDIT' }] });
    expect((await get('permissions/ui/experiments/7/grants?q=READ')).body.grants).toEqual([{ grantee_type: 'group', name: 'readers', permission: 'EDIT' }]);
  });

  it('explains each concerned user by the decision rule: direct, which group, a group’s NO_PERMISSIONS, and the default for anyone else', async () => {
    const r = await get('permissions/ui/experiments/7/effective').expect(200);
    const byName = Object.fromEntries((r.body.users as { username: string }[]).map((u) => [u.username, u]));
    expect(Object.keys(byName)).toEqual(['mia', 'ned', 'ola', 'robot']);
    expect(byName.mia).toMatchObject({ permission: 'MANAGE', source: 'direct', groups: [] });
    expect(byName.ned).toMatchObject({ permission: 'EDIT', source: 'group', groups: ['readers'] });
    expect(byName.ola).toMatchObject({ permission: 'NO_PERMISSIONS', source: 'group', groups: ['blocked'] });
    expect(byName.robot).toMatchObject({ permission: 'EDIT', source: 'direct', is_service_account: true });
    const other = await get('permissions/ui/experiments/8/effective?username=ned').expect(200);
    expect(other.body.users).toEqual([expect.objectContaining({ username: 'ned', permission: 'READ', source: 'default' })]);
    const admin = await get('permissions/ui/experiments/7/effective?username=admin').expect(200);
    expect(admin.body.users[0]).toMatchObject({ permission: 'MANAGE', source: 'admin' });
    expect((await get('permissions/ui/experiments/7/effective?username=nobody')).body.users).toEqual([]);
  });

  it('shows a manager who is not an administrator the grants here, user by user, and nothing about anyone else', async () => {
    const r = await get('permissions/ui/experiments/7/effective', 'mia').expect(200);
    expect(r.body).toEqual({
      scope: 'grants-here',
      users: [
        { username: 'mia', permission: 'MANAGE', source: 'direct', groups: [], is_service_account: false },
        { username: 'robot', permission: 'EDIT', source: 'direct', groups: [], is_service_account: true },
      ],
    });
    expect((await get('permissions/ui/experiments/7/effective?max_results=1', 'mia')).body.next_page_token).toBe('1');
    expect((await get('permissions/ui/experiments/7/effective?username=robot', 'mia')).body.users).toEqual([r.body.users[1]]);
    for (const username of ['ned', 'ola', 'admin', 'nobody'])
      expect((await get(`permissions/ui/experiments/7/effective?username=${username}`, 'mia')).body, username).toEqual({ users: [], scope: 'grants-here' });
  });

  it('is refused to anyone who may not manage the resource (the same rule as the grant routes)', async () => {
    for (const path of ['permissions/ui/experiments/7/grants', 'permissions/ui/experiments/7/effective'])
      expect((await get(path, 'ned')).status, path).toBe(403);
    expect((await get('permissions/ui/experiments/not-a-number/grants')).status).toBe(400);
  });

  it("tells the caller their own permission on each listed resource, and why", async () => {
    const r = await get('permissions/ui/my-permissions/experiments?id=7&id=8', 'ola').expect(200);
    // Why ola may not read 7 (her group's deny there) is about 7: she is told no more than for an id nobody has.
    expect(r.body.permissions).toEqual({
      '7': { permission: 'NO_PERMISSIONS', source: 'none', groups: [] },
      '8': { permission: 'READ', source: 'default', groups: [] },
    });
    expect((await get('permissions/ui/my-permissions/experiments?id=7&id=8', 'ned').expect(200)).body.permissions['7']).toEqual({
      permission: 'EDIT',
      source: 'group',
      groups: ['readers'],
    });
    expect((await get('permissions/ui/my-permissions/widgets?id=1', 'ola')).status).toBe(400);
    expect((await get('permissions/ui/my-permissions/experiments', 'ola')).status).toBe(400);
  });
});

describe('directories and the audit log for admins', () => {
  it('searches users, service accounts and groups, one page at a time', async () => {
    const sa = await get('permissions/ui/users?type=service_account').expect(200);
    expect(sa.body.users.map((u: { username: string }) => u.username)).toEqual(['robot']);
    const people = await get('permissions/ui/users?type=user&max_results=2').expect(200);
    expect(people.body.users.map((u: { username: string }) => u.username)).toEqual(['admin', 'mia']);
    const next = await get(`permissions/ui/users?type=user&max_results=2&page_token=${people.body.next_page_token}`).expect(200);
    expect(next.body.users.map((u: { username: string }) => u.username)).toEqual(['ned', 'ola']);
    expect((await get('permissions/ui/users?q=LA')).body.users.map((u: { username: string }) => u.username)).toEqual(['ola']);
    const groups = await get('permissions/ui/groups?q=read').expect(200);
    expect(groups.body.groups).toEqual([{ name: 'readers', members: 2, created_at: expect.any(String) }]);
  });

  it('filters the audit log by actor, action prefix and target', async () => {
    const r = await get('permissions/ui/audit?action=grant.&target=group:blocked').expect(200);
    expect(r.body.entries).toEqual([expect.objectContaining({ actor: 'admin', action: 'grant.create', target: 'experiment:7/group:blocked', new_value: 'NO_PERMISSIONS' })]);
    const members = await get('permissions/ui/audit?action=group.member&max_results=2').expect(200);
    expect(members.body.entries.map((e: { action: string }) => e.action)).toEqual(['group.member.add', 'group.member.add']);
    const older = await get(`permissions/ui/audit?action=group.member&max_results=2&page_token=${members.body.next_page_token}`).expect(200);
    expect(older.body.entries).toHaveLength(1);
    expect((await get('permissions/ui/audit?actor=mia')).body.entries).toEqual([]);
  });

  it('refuses them to non-admins', async () => {
    for (const path of ['permissions/ui/users', 'permissions/ui/groups', 'permissions/ui/audit']) expect((await get(path, 'mia')).status, path).toBe(403);
  });
});

describe('at scale: 10k users, 1k groups, 100k grants', () => {
  // How fast each first page comes back at this scale is measured by bench/ui-pages.mjs (npm run bench).
  it('serves the first page of every screen’s call', async () => {
    await seedScale(fg.store.sql);
    for (const [path, expected] of [
      ['permissions/ui/users?q=user-99', '"username":"scale-user-99"'],
      ['permissions/ui/users?type=service_account', '"username":"scale-user-0","display_name":"Scale user 0","is_admin":false,"is_service_account":true'],
      ['permissions/ui/groups?q=group-5', '"name":"scale-group-5","members":10'],
      ['permissions/ui/experiments/1000/grants', '"grantee_type":"service_account","name":"scale-user-0","permission":"READ"'],
      ['permissions/ui/experiments/1000/grants?q=user-7', '"name":"scale-user-7","permission":"READ"'],
      ['permissions/ui/experiments/1000/effective', '"username":"scale-user-1"'],
      ['permissions/ui/audit?action=grant.', '"action":"grant.create"'],
      ['permissions/ui/my-permissions/experiments?id=1000&id=1001&id=1002', '"1002"'],
    ] as const) {
      const r = await get(path).expect(200);
      expect(JSON.stringify(r.body), path).toContain(expected);
    }
  }, 60_000);
});
