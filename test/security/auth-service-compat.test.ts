import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok, type Caller, type Reply } from './harness/http.js';
import { startStack, type Stack } from './harness/stack.js';
import { randomHex, V2, V3 } from './harness/world.js';

/*
 * The attacker's view of MLflow basic-auth's admin API (AuthServiceClient's routes: users, roles,
 * role permissions, assignments, per-user permissions) and mlflow-oidc-auth's token and session
 * routes, against the real MLflow: a user who is no administrator cannot make roles, assign
 * themselves one, grant beyond what they manage, or read another user's tokens, sessions or
 * permissions; a manager of one experiment reaches no one's tokens. Bad input gets MLflow's error
 * JSON and changes nothing.
 */
const tag = randomHex(3);
let stack: Stack;
let admin: Caller;
let mallory: Caller;
let manager: Caller;
let roleId = 0;
let experimentId = '';
let otherExperimentId = '';
let aliceKeyId = 0;

const refused = (r: Reply, status: number, code: string) => {
  expect(r.status, r.text).toBe(status);
  expect(r.json).toMatchObject({ error_code: code, message: expect.any(String) });
};

/** flowgate's state an attack could change: roles with their permissions and members, alice's tokens, everyone's grants on the experiments. */
async function state(): Promise<string> {
  const roles = ok(await admin('GET', `${V3}/roles/list`), 'roles');
  const users = [];
  for (const r of roles.roles as Array<{ id: number }>) users.push(ok(await admin('GET', `${V3}/roles/users/list`, { query: { role_id: String(r.id) } }), 'members'));
  const keys = ok(await admin('GET', `${V2}/users/alice/tokens`), 'alice tokens');
  const grants = [];
  for (const id of [experimentId, otherExperimentId]) grants.push(ok(await admin('GET', `${V2}/permissions/experiments/${id}/users`), 'grants'));
  const mine = ok(await admin('GET', `${V3}/users/permissions/list`, { query: { username: 'mallory' } }), 'mallory');
  return JSON.stringify({ roles, users, keys, grants, mine });
}

beforeAll(async () => {
  stack = await startStack(['mallory', 'manager', 'alice']);
  admin = stack.through('admin');
  mallory = stack.through('mallory');
  manager = stack.through('manager');
  roleId = ok(await admin('POST', `${V3}/roles/create`, { body: { workspace: 'default', name: `team-${tag}` } }), 'role').role.id;
  experimentId = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `asc-${tag}` } }), 'experiment').experiment_id;
  otherExperimentId = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `asc-other-${tag}` } }), 'experiment').experiment_id;
  ok(await admin('POST', `${V3}/users/permissions/grant`, { body: { username: 'manager', resource_type: 'experiment', resource_id: experimentId, permission: 'MANAGE' } }), 'manager');
  ok(await admin('POST', `${V3}/roles/permissions/add`, { body: { role_id: roleId, resource_type: 'experiment', resource_pattern: otherExperimentId, permission: 'READ' } }), 'role grant');
  aliceKeyId = ok(await admin('POST', `${V2}/users/alice/tokens`, { body: { name: 'laptop' } }), 'alice key').id;
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

describe('a user who is no administrator', () => {
  it('cannot create, read, change or delete roles, or assign one (themselves included)', async () => {
    const before = await state();
    refused(await mallory('POST', `${V3}/roles/create`, { body: { workspace: 'default', name: `mine-${tag}` } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('GET', `${V3}/roles/list`), 403, 'PERMISSION_DENIED');
    refused(await mallory('GET', `${V3}/roles/get`, { query: { role_id: String(roleId) } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('POST', `${V3}/roles/assign`, { body: { username: 'mallory', role_id: roleId } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('POST', `${V3}/roles/permissions/add`, { body: { role_id: roleId, resource_type: 'experiment', resource_pattern: '*', permission: 'MANAGE' } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('DELETE', `${V3}/roles/delete`, { body: { role_id: roleId } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('GET', `${V3}/roles/users/list`, { query: { role_id: String(roleId) } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('PATCH', `${V2}/users/update-admin`, { body: { username: 'mallory', is_admin: true } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('DELETE', `${V2}/users/delete`, { body: { username: 'alice' } }), 403, 'PERMISSION_DENIED');
    refused(await mallory('POST', `${V3}/users/permissions/grant`, { body: { username: 'mallory', resource_type: 'experiment', resource_id: experimentId, permission: 'MANAGE' } }), 403, 'PERMISSION_DENIED');
    expect(await state()).toBe(before);
  });

  it("reads no other user's account, roles, permissions, tokens or sessions, whether the name exists or not", async () => {
    for (const who of ['alice', `nobody-${tag}`]) {
      refused(await mallory('GET', `${V2}/users/get`, { query: { username: who } }), 403, 'PERMISSION_DENIED');
      refused(await mallory('GET', `${V3}/users/roles/list`, { query: { username: who } }), 403, 'PERMISSION_DENIED');
      refused(await mallory('GET', `${V3}/users/permissions/list`, { query: { username: who } }), 403, 'PERMISSION_DENIED');
      refused(await mallory('GET', `${V3}/users/permissions/get`, { query: { username: who, resource_type: 'experiment', resource_id: otherExperimentId } }), 403, 'PERMISSION_DENIED');
      refused(await mallory('GET', `${V2}/users/${who}/tokens`), 403, 'PERMISSION_DENIED');
      refused(await mallory('POST', `${V2}/users/${who}/tokens`, { body: { name: 'stolen' } }), 403, 'PERMISSION_DENIED');
      refused(await mallory('DELETE', `${V2}/users/${who}/tokens/${aliceKeyId}`), 403, 'PERMISSION_DENIED');
      refused(await mallory('DELETE', `${V2}/users/${who}/tokens`), 403, 'PERMISSION_DENIED');
      refused(await mallory('GET', `${V2}/users/${who}/sessions`), 403, 'PERMISSION_DENIED');
      refused(await mallory('DELETE', `${V2}/users/${who}/sessions/1`), 403, 'PERMISSION_DENIED');
      refused(await mallory('PATCH', `${V2}/users/access-token`, { body: { username: who } }), 403, 'PERMISSION_DENIED');
      refused(await mallory('PATCH', `${V2}/users/update-password`, { body: { username: who, password: 'x' } }), 403, 'PERMISSION_DENIED');
    }
  });

  it("cannot reach another user's token through their own token routes: alice's id reads as no token", async () => {
    const before = await state();
    refused(await mallory('DELETE', `${V2}/users/current/tokens/${aliceKeyId}`), 404, 'RESOURCE_DOES_NOT_EXIST');
    refused(await mallory('DELETE', `${V2}/users/current/tokens/laptop`), 404, 'RESOURCE_DOES_NOT_EXIST');
    expect(await state()).toBe(before);
  });

  it('sees only their own grants in users/current/permissions', async () => {
    const mine = ok(await mallory('GET', `${V3}/users/current/permissions`), 'own');
    expect(mine).toEqual({ is_admin: false, permissions: [] });
    const managers = ok(await manager('GET', `${V3}/users/current/permissions`), 'own');
    expect(managers.permissions).toEqual([expect.objectContaining({ resource_type: 'experiment', resource_pattern: experimentId, permission: 'MANAGE' })]);
    expect(JSON.stringify(managers)).not.toContain(`team-${tag}`);
  });
});

describe('a manager of one experiment', () => {
  it('grants and revokes a user on it, but on nothing else and never on every experiment', async () => {
    ok(await manager('POST', `${V3}/users/permissions/grant`, { body: { username: 'alice', resource_type: 'experiment', resource_id: experimentId, permission: 'READ' } }), 'manager grants');
    ok(await manager('POST', `${V3}/users/permissions/revoke`, { body: { username: 'alice', resource_type: 'experiment', resource_id: experimentId } }), 'manager revokes');
    const before = await state();
    refused(await manager('POST', `${V3}/users/permissions/grant`, { body: { username: 'manager', resource_type: 'experiment', resource_id: otherExperimentId, permission: 'MANAGE' } }), 403, 'PERMISSION_DENIED');
    refused(await manager('POST', `${V3}/users/permissions/grant`, { body: { username: 'manager', resource_type: 'experiment', resource_id: '*', permission: 'READ' } }), 403, 'PERMISSION_DENIED');
    refused(await manager('POST', `${V3}/users/permissions/revoke`, { body: { username: 'alice', resource_type: 'experiment', resource_id: otherExperimentId } }), 403, 'PERMISSION_DENIED');
    expect(await state()).toBe(before);
  });

  it('learns nothing from a revoke about whether a name exists', async () => {
    const a = await manager('POST', `${V3}/users/permissions/revoke`, { body: { username: 'alice', resource_type: 'experiment', resource_id: experimentId } });
    const b = await manager('POST', `${V3}/users/permissions/revoke`, { body: { username: `ghost-${tag}`, resource_type: 'experiment', resource_id: experimentId } });
    refused(a, 404, 'RESOURCE_DOES_NOT_EXIST');
    refused(b, 404, 'RESOURCE_DOES_NOT_EXIST');
    expect(b.json.message.replace(`ghost-${tag}`, 'alice')).toBe(a.json.message);
  });

  it("reaches no other user's tokens or sessions", async () => {
    refused(await manager('GET', `${V2}/users/alice/tokens`), 403, 'PERMISSION_DENIED');
    refused(await manager('DELETE', `${V2}/users/alice/tokens/${aliceKeyId}`), 403, 'PERMISSION_DENIED');
    refused(await manager('GET', `${V2}/users/alice/sessions`), 403, 'PERMISSION_DENIED');
  });
});

describe("bad input gets MLflow's error JSON and changes nothing", () => {
  const CASES: ReadonlyArray<readonly [string, string, string, Record<string, unknown> | undefined, Record<string, string> | undefined]> = [
    ['role id not a number', 'GET', `${V3}/roles/get`, undefined, { role_id: 'abc' }],
    ['role in another workspace', 'POST', `${V3}/roles/create`, { workspace: 'research', name: `ws-${tag}` }, undefined],
    ['roles listed in another workspace', 'GET', `${V3}/roles/list`, undefined, { workspace: 'research' }],
    ['unknown resource type', 'POST', `${V3}/roles/permissions/add`, { role_id: 0, resource_type: 'notebook', resource_pattern: '*', permission: 'READ' }, undefined],
    ['a sub-resource tier', 'POST', `${V3}/roles/permissions/add`, { role_id: 0, resource_type: 'run', resource_pattern: '*', permission: 'READ' }, undefined],
    ['NO_PERMISSIONS, which MLflow refuses on a resource', 'POST', `${V3}/roles/permissions/add`, { role_id: 0, resource_type: 'experiment', resource_pattern: '1', permission: 'NO_PERMISSIONS' }, undefined],
    ['an experiment id that is not one', 'POST', `${V3}/roles/permissions/add`, { role_id: 0, resource_type: 'experiment', resource_pattern: 'abc', permission: 'READ' }, undefined],
    ['a gateway id, which flowgate grants by name', 'POST', `${V3}/roles/permissions/add`, { role_id: 0, resource_type: 'gateway_endpoint', resource_pattern: 'e-123', permission: 'USE' }, undefined],
    ['an unknown field', 'POST', `${V3}/roles/assign`, { username: 'alice', role_id: 0, admin: true }, undefined],
    ['rename a role', 'PATCH', `${V3}/roles/update`, { role_id: 0, name: `renamed-${tag}` }, undefined],
    ['workspace through the per-user routes', 'POST', `${V3}/users/permissions/grant`, { username: 'alice', resource_type: 'workspace', resource_id: '*', permission: 'USE' }, undefined],
    ['a bad token name', 'POST', `${V2}/users/alice/tokens`, { name: '../../etc' }, undefined],
    ['a session pk that is not a number', 'DELETE', `${V2}/users/alice/sessions/abc`, undefined, undefined],
    ['a password to store', 'PATCH', `${V2}/users/update-password`, { username: 'alice', password: 'hunter2' }, undefined],
  ];

  it.each(CASES)('%s', async (_what, method, path, body, query) => {
    const before = await state();
    const withRole = body && 'role_id' in body ? { ...body, role_id: roleId } : body;
    const r = await admin(method, path, { ...(withRole ? { body: withRole } : {}), ...(query ? { query } : {}) });
    refused(r, 400, 'INVALID_PARAMETER_VALUE');
    expect(r.text).not.toContain('hunter2');
    expect(await state()).toBe(before);
  });
});
