import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceCaller } from '../helpers/admin-calls.js';
import { startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * The attacker's (and the administrator's) view of MLflow's own admin routes under workspaces, against
 * the real MLflow run with `--enable-workspaces`:
 * - `users/permissions/revoke` (AuthServiceClient's) checks MANAGE, looks the grant up and removes it in
 *   one workspace, the request's: mallory, managing her own `X` in ws-m, learns nothing about bob's grant
 *   on the default workspace's `X` (the same 404 as for no grant, no audit entry), and a grant bob holds
 *   in ws-m is hers to revoke there.
 * - The role routes read and write role permissions in the roles' workspace (`default`) whatever the
 *   header names, answer each with its own id, and a `role_permission_id` of a group's grant kept in
 *   another workspace names no role permission: 404, nothing changed, nothing audited.
 * - A workspace's administrator who is not flowgate's gives roles to groups that exist: a group name
 *   nobody has is a 404, as a username nobody has, and no group is made.
 */
const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';

describe("MLflow's admin routes under workspaces, attacked", () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  const { withTokens, send, ok, auditMark } = workspaceCaller(() => fg.url);
  const newAudit = async (since: number) =>
    ((await ok('admin', undefined, 'GET', `${V2}/permissions/audit?max_results=50`)).entries as Array<{ id: number; actor: string; action: string; target: string }>).filter((e) => e.id > since);
  const revoke = (who: string, ws: string | undefined, username: string, resource_id: string) =>
    send(who, ws, 'POST', `${V3}/users/permissions/revoke`, { username, resource_type: 'registered_model', resource_id });
  /** Bob's grant on model `name` in `ws`, as an administrator reads it: its level, or the status when there is none. */
  const bobOn = async (ws: string | undefined, name: string) => {
    const r = await send('admin', ws, 'GET', `${V2}/permissions/users/bob/registered-models/${name}`);
    return r.status === 200 ? r.json.permission.permission : r.status;
  };

  beforeAll(async () => {
    mlflow = await startMlflowServer({ args: ['--enable-workspaces'] });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DEFAULT_PERMISSION: 'READ' });
    await withTokens(['mallory', 'bob', 'carol', 'wanda']);
    for (const name of ['ws-m', 'ws-a', 'ws-b']) await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/users`, { username: 'mallory', permission: 'USE' });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/users`, { username: 'wanda', permission: 'MANAGE' });
    // `X` in the default workspace, where bob holds READ; mallory's own `X` in ws-m (she manages it as its creator).
    await ok('admin', undefined, 'POST', `${V2}/registered-models/create`, { name: 'X' });
    await ok('admin', undefined, 'POST', `${V2}/permissions/users/bob/registered-models/X`, { permission: 'READ' });
    await ok('mallory', 'ws-m', 'POST', `${V2}/registered-models/create`, { name: 'X' });
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
  });

  describe('users/permissions/revoke acts in one workspace, the request’s', () => {
    it("a manager in her workspace learns nothing of a grant in another: bob's default-workspace grant answers as no grant, stays, and nothing is audited", async () => {
      const mark = await auditMark();
      const held = await revoke('mallory', 'ws-m', 'bob', 'X');
      const none = await revoke('mallory', 'ws-m', 'carol', 'X');
      const ghost = await revoke('mallory', 'ws-m', 'ghost-user', 'X');
      expect(held.status, held.text).toBe(404);
      expect(held.json.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
      expect(none.text.replace('carol', 'bob')).toBe(held.text);
      expect(ghost.text.replace('ghost-user', 'bob')).toBe(held.text);
      expect(await newAudit(mark)).toEqual([]);
      expect(await bobOn(undefined, 'X')).toBe('READ');
    });

    it('a grant bob holds in her workspace is hers to revoke there, and only that one goes', async () => {
      await ok('mallory', 'ws-m', 'POST', `${V3}/users/permissions/grant`, { username: 'bob', resource_type: 'registered_model', resource_id: 'X', permission: 'EDIT' });
      expect(await bobOn('ws-m', 'X')).toBe('EDIT');
      // Bob's own list, and an administrator's list of his, name each grant with its workspace, whichever the request's.
      const rows = (answer: Record<string, unknown>) =>
        (answer.permissions as Array<{ workspace: string; resource_type: string; resource_pattern: string; permission: string }>).filter((p) => p.resource_type === 'registered_model').map((p) => `${p.workspace} ${p.resource_pattern} ${p.permission}`).sort();
      expect(rows(await ok('bob', undefined, 'GET', `${V3}/users/current/permissions`))).toEqual(['default X READ', 'ws-m X EDIT']);
      expect(rows(await ok('admin', 'ws-m', 'GET', `${V3}/users/permissions/list?username=bob`))).toEqual(['default X READ', 'ws-m X EDIT']);
      const mark = await auditMark();
      const r = await revoke('mallory', 'ws-m', 'bob', 'X');
      expect(r.status, r.text).toBe(200);
      expect(await bobOn('ws-m', 'X')).toBe(404);
      expect(await bobOn(undefined, 'X')).toBe('READ');
      expect((await newAudit(mark)).map((e) => `${e.actor} ${e.action} ${e.target}`)).toEqual(['mallory grant.delete registered_model:X/user:bob']);
      // Revoked once: a second revoke is the 404 of no grant, and writes nothing.
      const again = await revoke('mallory', 'ws-m', 'bob', 'X');
      expect(again.status, again.text).toBe(404);
      expect((await newAudit(mark)).length).toBe(1);
    });

    it("an administrator's revoke in the default workspace removes the default workspace's grant only", async () => {
      await ok('admin', 'ws-m', 'POST', `${V3}/users/permissions/grant`, { username: 'bob', resource_type: 'registered_model', resource_id: 'X', permission: 'READ' });
      expect((await revoke('admin', undefined, 'bob', 'X')).status).toBe(200);
      expect(await bobOn(undefined, 'X')).toBe(404);
      expect(await bobOn('ws-m', 'X')).toBe('READ');
      expect((await revoke('admin', 'ws-m', 'bob', 'X')).status).toBe(200);
      expect(await bobOn('ws-m', 'X')).toBe(404);
    });
  });

  describe("the role routes read and write in the roles' workspace", () => {
    let roleId = 0;
    const listed = async (ws: string | undefined) =>
      ((await ok('admin', ws, 'GET', `${V3}/roles/permissions/list?role_id=${roleId}`)).role_permissions as Array<{ id: number; resource_type: string; resource_pattern: string; permission: string }>).map(
        (p) => `${p.id} ${p.resource_type} ${p.resource_pattern} ${p.permission}`,
      );
    const groupOn = async (ws: string | undefined, name: string) => {
      const r = await send('admin', ws, 'GET', `${V2}/permissions/groups/team-r/registered-models/${name}`);
      return r.status === 200 ? r.json.permission.permission : r.status;
    };
    const add = (ws: string | undefined, resource_pattern: string, permission = 'READ') =>
      send('admin', ws, 'POST', `${V3}/roles/permissions/add`, { role_id: roleId, resource_type: 'registered_model', resource_pattern, permission });

    beforeAll(async () => {
      roleId = ((await ok('admin', undefined, 'POST', `${V3}/roles/create`, { workspace: 'default', name: 'team-r' })).role as { id: number }).id;
    });

    it("a permission added with another workspace's header is kept in the role's workspace and answered with its own id", async () => {
      const r = await add('ws-a', 'Y');
      expect(r.status, r.text).toBe(200);
      const id = r.json.role_permission.id as number;
      expect(r.json.role_permission).toMatchObject({ role_id: roleId, resource_type: 'registered_model', resource_pattern: 'Y', permission: 'READ' });
      expect(await listed(undefined)).toContain(`${id} registered_model Y READ`);
      expect(await listed('ws-a')).toEqual(await listed(undefined));
      expect(await groupOn(undefined, 'Y')).toBe('READ');
      expect(await groupOn('ws-a', 'Y')).toBe(404);
      // Changed and removed by that id, whatever the header: the change is made, and said only when made.
      const changed = await send('admin', 'ws-a', 'PATCH', `${V3}/roles/permissions/update`, { role_permission_id: id, permission: 'EDIT' });
      expect(changed.status, changed.text).toBe(200);
      expect(await groupOn(undefined, 'Y')).toBe('EDIT');
      expect((await send('admin', 'ws-b', 'DELETE', `${V3}/roles/permissions/remove`, { role_permission_id: id })).status).toBe(200);
      expect(await groupOn(undefined, 'Y')).toBe(404);
      expect(await listed(undefined)).not.toContain(`${id} registered_model Y EDIT`);
    });

    it("a second permission on the same resource is refused, whatever the header, never answered with the first one's id", async () => {
      const first = await add(undefined, 'Z');
      expect(first.status, first.text).toBe(200);
      const before = await listed(undefined);
      const mark = await auditMark();
      const second = await add('ws-a', 'Z', 'EDIT');
      expect(second.status, second.text).toBe(409);
      expect(second.json.error_code).toBe('RESOURCE_ALREADY_EXISTS');
      expect(await listed(undefined)).toEqual(before);
      expect(await groupOn('ws-a', 'Z')).toBe(404);
      expect(await newAudit(mark)).toEqual([]);
    });

    it("the id of a group's grant kept in another workspace names no role permission: 404, nothing changed, nothing audited", async () => {
      // The group's grant in ws-b (the admin API's) lies between two role permissions' ids.
      const low = (await add(undefined, 'low')).json.role_permission.id as number;
      await ok('admin', 'ws-b', 'POST', `${V2}/permissions/groups/team-r/registered-models/W`, { permission: 'READ' });
      await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-b/groups`, { group_name: 'team-r', permission: 'USE' });
      const high = (await add(undefined, 'high')).json.role_permission.id as number;
      const between = [];
      for (let id = low + 2; id < high; id += 2) between.push(id);
      expect(between.length).toBeGreaterThanOrEqual(2);
      const before = await listed(undefined);
      const mark = await auditMark();
      for (const id of between)
        for (const ws of [undefined, 'ws-b']) {
          const removed = await send('admin', ws, 'DELETE', `${V3}/roles/permissions/remove`, { role_permission_id: id });
          const changed = await send('admin', ws, 'PATCH', `${V3}/roles/permissions/update`, { role_permission_id: id, permission: 'MANAGE' });
          for (const r of [removed, changed]) {
            expect(r.status, `${id} in ${ws}: ${r.text}`).toBe(404);
            expect(r.json).toEqual({ error_code: 'RESOURCE_DOES_NOT_EXIST', message: `Role permission with id=${id} not found` });
          }
        }
      expect(await newAudit(mark)).toEqual([]);
      expect(await groupOn('ws-b', 'W')).toBe('READ');
      const members = (await ok('admin', undefined, 'GET', `${V3}/permissions/workspaces/ws-b/groups`)).groups as Array<{ group_name: string; permission: string }>;
      expect(members).toEqual([expect.objectContaining({ group_name: 'team-r', permission: 'USE' })]);
      expect(await listed(undefined)).toEqual(before);
      // Nor is it listed: the role's permissions are its grants in the roles' workspace, its membership there included, no other.
      expect(before.join('\n')).not.toMatch(/ W |workspace/);
    });
  });

  describe("a workspace's administrator who is not flowgate's makes no groups", () => {
    const members = async () => ((await ok('admin', undefined, 'GET', `${V3}/permissions/workspaces/ws-m/groups`)).groups as Array<{ group_name: string }>).map((g) => g.group_name);

    it('a group name nobody has is the 404 of a username nobody has, and no group is made', async () => {
      const mark = await auditMark();
      const group = await send('wanda', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/groups`, { group_name: 'idp-role-guess', permission: 'USE' });
      const user = await send('wanda', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/users`, { username: 'idp-role-guess', permission: 'USE' });
      expect(group.status, group.text).toBe(404);
      expect(user.status, user.text).toBe(404);
      expect(group.json.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
      expect((await send('admin', undefined, 'GET', `${V2}/permissions/groups/idp-role-guess/users`)).status).toBe(404);
      expect(await newAudit(mark)).toEqual([]);
      expect(await members()).not.toContain('idp-role-guess');
    });

    it('a group that exists she gives a role; an administrator still makes one by naming it', async () => {
      await ok('admin', undefined, 'POST', `${V2}/permissions/groups`, { group_name: 'known-team' });
      expect((await send('wanda', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/groups`, { group_name: 'known-team', permission: 'USE' })).status).toBe(201);
      expect((await send('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/groups`, { group_name: 'new-team', permission: 'USE' })).status).toBe(201);
      expect(await members()).toEqual(expect.arrayContaining(['known-team', 'new-team']));
    });
  });
});
