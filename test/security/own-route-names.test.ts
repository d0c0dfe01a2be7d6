import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantPath } from '../../src/commands/admin-cli/grants.js';
import { kindShape } from '../../src/commands/admin-cli/resources.js';
import { adminIdSegments } from '../../src/resources/kinds.js';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/*
 * Names are data, not paths. MLflow lets anyone signed in name a gateway secret, and anyone with EDIT
 * name a scorer, with `/` and `..` in it; an identity provider sends groups such as `/ml-team`. When
 * flowgate read `%2F` in its own routes as `/` and resolved `..`, an administrator's grant on the secret
 * `../../../../users/mallory/experiments/0` (built as the Manage screens and the CLI build it) gave
 * mallory MANAGE on experiment 0, and a revoke on a scorer named `../../../../users/bob` deleted bob.
 */
const V2 = '/api/2.0/mlflow';
let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const api = () => request(fg.url);
const admin = (method: 'get' | 'post' | 'delete', path: string, body?: object) => {
  const r = api()[method](path).set('Authorization', adminAuth());
  return body === undefined ? r : r.send(body);
};
const grantsOf = (user: string) => fg.store.sql.all('SELECT g.resource_kind, g.resource_id, g.permission FROM grants g JOIN users u ON u.id = g.user_id WHERE u.username = ? ORDER BY 1, 2', [user]);
const groupNames = async () => ((await fg.store.sql.all('SELECT name FROM groups ORDER BY name')) as { name: string }[]).map((g) => g.name);
const user = async (name: string) => (await admin('get', `${V2}/permissions/users/${encodeURIComponent(name)}`)).body.user as { username: string; disabled?: boolean } | undefined;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  for (const username of ['mallory', 'bob', 'alice']) await admin('post', `${V2}/users/create`, { username }).expect(201);
  await admin('post', `${V2}/permissions/groups`, { group_name: 'ml-team' }).expect(201);
  await admin('post', `${V2}/permissions/groups`, { group_name: '/ml-team' }).expect(201);
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

describe("names that look like paths, in flowgate's own routes", () => {
  it('a grant on a resource named with `/` and `..` lands on that name, never on the route its text spells', async () => {
    const secret = kindShape('gateway_secret');
    for (const name of ['../../../../users/mallory/experiments/0', 'x/../../../../../users/mallory/experiments/0', 'a\\..\\..\\users']) {
      const r = await admin('post', `${V2}/${grantPath({ segment: 'users', name: 'alice' } as never, secret, name)}`, { permission: 'MANAGE' });
      expect(r.status, `${name}: ${r.text}`).toBe(201);
      expect(r.body.permission).toMatchObject({ name, username: 'alice', permission: 'MANAGE' });
      const read = await admin('get', `${V2}/permissions/users/alice/gateways/secrets/${encodeURIComponent(name)}`);
      expect(read.body.permission?.name, name).toBe(name);
    }
    expect(await grantsOf('mallory')).toEqual([]);
    expect((await grantsOf('alice')).map((g) => (g as { resource_kind: string }).resource_kind)).toEqual(Array(3).fill('gateway_secret'));
  });

  it('a revoke or a read on a scorer or user named like another route acts on nothing else', async () => {
    const scorer = kindShape('scorer');
    for (const id of ['12/../../../../users/bob', '12/../../../../users/bob/disable']) {
      const revoke = await admin('delete', `${V2}/${grantPath({ segment: 'users', name: 'alice' } as never, scorer, id)}`);
      expect(revoke.status, revoke.text).toBe(404);
      expect(revoke.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
    }
    // A crafted Manage-screen link to user `bob/.`: not bob.
    expect((await admin('get', `${V2}/permissions/users/${encodeURIComponent('bob/.')}`)).status).not.toBe(200);
    expect([400, 404]).toContain((await admin('post', `${V2}/permissions/users/${encodeURIComponent('bob/.')}/disable`)).status);
    expect(await user('bob')).toMatchObject({ username: 'bob' });
    expect((await user('bob'))?.disabled ?? false).toBe(false);
  });

  it("a group named `/ml-team`, as Keycloak's group paths are, is that group and not `ml-team`", async () => {
    const r = await admin('post', `${V2}/permissions/groups/${encodeURIComponent('/ml-team')}/experiments/7`, { permission: 'EDIT' });
    expect(r.status, r.text).toBe(201);
    expect(r.body.permission).toMatchObject({ group_name: '/ml-team', permission: 'EDIT' });
    expect(r.body.new_group).toBeUndefined();
    expect((await admin('get', `${V2}/permissions/groups/ml-team/experiments/7`)).status).toBe(404);
    expect(await groupNames()).toEqual(['/ml-team', 'ml-team']);
  });

  it('dot segments in an own route are refused, not resolved: 401 without credentials, else 400, nothing changed', async () => {
    const before = await grantsOf('mallory');
    for (const path of [
      `${V2}/permissions/users/alice/experiments/../../mallory/experiments/0`,
      `${V2}/permissions/users/alice/experiments/%2E%2E/%2e%2e/mallory/experiments/0`,
      `${V2}/permissions/users/mallory/experiments/0/.`,
    ]) {
      expect((await api().post(path).send({ permission: 'MANAGE' })).status, path).toBe(401);
      const r = await admin('post', path, { permission: 'MANAGE' });
      expect(r.status, path).toBe(400);
      expect(r.body).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringContaining("'.' or '..'") });
    }
    expect(await grantsOf('mallory')).toEqual(before);
  });

  it('the CLI and the Manage screens name two-part ids in two segments: a scorer, an MCP server, a Skill of an organization', async () => {
    for (const [kind, id] of [
      ['scorer', '12/judge/with/slashes'],
      ['mcp_server', 'acme/search'],
      ['skill', '@acme/reviewer'],
      ['skill', 'plain-skill'],
    ] as const) {
      const path = `${V2}/permissions/users/bob/${kindShape(kind).segment}/${adminIdSegments(kind, id)}`;
      const r = await admin('post', path, { permission: 'READ' });
      expect(r.status, `${kind} ${id}: ${r.text}`).toBe(201);
      expect((await admin('get', path)).status, `${kind} ${id}`).toBe(200);
    }
    expect((await grantsOf('bob')).map((g) => (g as { resource_id: string }).resource_id).sort()).toEqual(['12/judge/with/slashes', '@acme/reviewer', 'acme/search', 'plain-skill']);
    // Its first part holding an encoded `/` would split elsewhere: no id.
    expect((await admin('post', `${V2}/permissions/users/bob/scorers/${encodeURIComponent('12/x')}/judge`, { permission: 'READ' })).status).toBe(400);
  });
});
