import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * Issue 35, MLflow's MCP server registry for everyone: the real MLflow (pinned 3.17.2) behind flowgate.
 * A server is a kind of its own keyed by `<namespace>/<slug>`: its creator manages it, READ reads
 * everything under it, EDIT changes it, deleting anything under it takes MANAGE, searches answer only
 * readable servers, and grants go when the server does.
 */
const MCP = '/api/3.0/mlflow/mcp-servers';
const path = (name: string, rest = '') => `${MCP}/${name}${rest}`;
const version = (name: string, v: string) => ({ server_json: { name, version: v, description: 'tools' } });

describe('the MCP server registry behind flowgate', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens } = jsonCaller(() => fg.url);

  const as = (who: string, method: string, p: string, body?: unknown) =>
    fetch(fg.url + p, {
      method,
      headers: { Authorization: basicOf(who), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const status = async (who: string, method: string, p: string, body?: unknown) => (await as(who, method, p, body)).status;
  const searched = async (who: string, query = '') => {
    const r = await as(who, 'GET', `${MCP}${query}`);
    expect(r.status).toBe(200);
    return ((await r.json()) as { mcp_servers: Array<{ name: string }> }).mcp_servers.map((s) => s.name).sort();
  };
  const grantPath = (side: 'users' | 'groups', who: string, name: string) => `/api/2.0/mlflow/permissions/${side}/${who}/mcp-servers/${name}`;

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann', 'bob', 'cat', 'dan']);
    await call('POST', '/api/2.0/mlflow/permissions/groups', { group_name: 'tool-readers' });
    await call('POST', '/api/2.0/mlflow/permissions/groups/tool-readers/users', { username: 'dan' });
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
  });

  it('a non-admin creates a server and manages it: every route under it, and its grants', async () => {
    const made = await as('ann', 'POST', MCP, { name: 'com.acme/search', description: 'search tools' });
    expect(made.status).toBe(200);
    expect(((await made.json()) as { name: string }).name).toBe('com.acme/search');
    // The creator's grant, as the admin API answers it (the name whole, under `name`).
    expect(await call('GET', grantPath('users', 'ann', 'com.acme/search'))).toEqual({
      permission: { resource_type: 'mcp_server', name: 'com.acme/search', username: 'ann', permission: 'MANAGE' },
    });

    expect(await status('ann', 'POST', path('com.acme/search', '/versions'), version('com.acme/search', '1.0.0'))).toBe(200);
    expect(await status('ann', 'POST', path('com.acme/search', '/versions'), version('com.acme/search', '1.1.0'))).toBe(200);
    expect(await status('ann', 'POST', path('com.acme/search', '/aliases'), { alias: 'stable', version: '1.0.0' })).toBe(200);
    expect(await status('ann', 'POST', path('com.acme/search', '/tags'), { key: 'team', value: 'a' })).toBe(200);
    expect(await status('ann', 'POST', path('com.acme/search', '/versions/1.0.0/tags'), { key: 'qa', value: 'ok' })).toBe(200);
    const endpoint = await as('ann', 'POST', path('com.acme/search', '/endpoints'), { url: 'https://tools.example.com/mcp', server_alias: 'stable' });
    expect(endpoint.status).toBe(200);
    const endpointId = ((await endpoint.json()) as { id: string }).id;
    expect(await status('ann', 'PATCH', path('com.acme/search'), { description: 'better search' })).toBe(200);
    expect(await status('ann', 'PATCH', path('com.acme/search', '/versions/1.1.0'), { status: 'active' })).toBe(200);
    expect(await status('ann', 'PATCH', path('com.acme/search', `/endpoints/${endpointId}`), { url: 'https://tools.example.com/mcp2' })).toBe(200);
    for (const rest of ['', '/versions', '/versions/1.0.0', '/aliases/stable', '/endpoints', `/endpoints/${endpointId}`])
      expect(await status('ann', 'GET', path('com.acme/search', rest)), rest).toBe(200);
    expect(await searched('ann')).toEqual(['com.acme/search']);
    // The UI's twin, the same rules.
    expect((await as('ann', 'GET', `/ajax-api/3.0/mlflow/mcp-servers/com.acme/search`)).status).toBe(200);
  }, 120_000);

  it('a user without a grant: 403 on reading, changing and deleting, and absent from searches', async () => {
    const denied: Array<[string, string, unknown?]> = [
      ['GET', path('com.acme/search')],
      ['GET', path('com.acme/search', '/versions')],
      ['GET', path('com.acme/search', '/versions/1.0.0')],
      ['GET', path('com.acme/search', '/aliases/stable')],
      ['GET', path('com.acme/search', '/endpoints')],
      ['PATCH', path('com.acme/search'), { description: 'mine now' }],
      ['POST', path('com.acme/search', '/versions'), version('com.acme/search', '9.0.0')],
      ['POST', path('com.acme/search', '/tags'), { key: 'owner', value: 'bob' }],
      ['POST', path('com.acme/search', '/aliases'), { alias: 'stable', version: '1.1.0' }],
      ['POST', path('com.acme/search', '/endpoints'), { url: 'https://evil.example.com/mcp' }],
      ['DELETE', path('com.acme/search', '/tags/team')],
      ['DELETE', path('com.acme/search', '/versions/1.0.0')],
      ['DELETE', path('com.acme/search')],
    ];
    for (const [method, p, body] of denied) {
      const r = await as('bob', method, p, body);
      expect(r.status, `${method} ${p}`).toBe(403);
      expect(((await r.json()) as { error_code: string }).error_code).toBe('PERMISSION_DENIED');
    }
    expect(await searched('bob')).toEqual([]);
    const endpoints = await as('bob', 'GET', `${MCP}/endpoints`);
    expect(((await endpoints.json()) as { mcp_access_endpoints: unknown[] }).mcp_access_endpoints).toEqual([]);
    // Nothing bob tried landed.
    const server = (await call('GET', path('com.acme/search'))) as { description: string; tags: Record<string, string> };
    expect(server.description).toBe('better search');
    expect(server.tags).toEqual({ team: 'a' });
  });

  it('READ through the admin API path: bob sees it (and its endpoints) and cannot change it; EDIT changes, MANAGE deletes', async () => {
    await call('POST', grantPath('users', 'bob', 'com.acme/search'), { permission: 'READ' });
    expect(await searched('bob')).toEqual(['com.acme/search']);
    expect(await status('bob', 'GET', path('com.acme/search', '/versions/1.1.0'))).toBe(200);
    const endpoints = (await (await as('bob', 'GET', `${MCP}/endpoints`)).json()) as { mcp_access_endpoints: Array<{ server_name: string }> };
    expect(endpoints.mcp_access_endpoints.map((e) => e.server_name)).toEqual(['com.acme/search']);
    expect(await status('bob', 'PATCH', path('com.acme/search'), { description: 'mine now' })).toBe(403);
    expect(await status('bob', 'POST', path('com.acme/search', '/tags'), { key: 'owner', value: 'bob' })).toBe(403);

    // The name encoded as one segment is a name holding a `/` in one segment, no MCP server's: no route (404), no grant.
    await expect(call('PATCH', `/api/2.0/mlflow/permissions/users/bob/mcp-servers/${encodeURIComponent('com.acme/search')}`, { permission: 'EDIT' })).rejects.toThrow(/→ 404/);
    await call('PATCH', grantPath('users', 'bob', 'com.acme/search'), { permission: 'EDIT' });
    expect(await status('bob', 'POST', path('com.acme/search', '/tags'), { key: 'reviewed', value: 'bob' })).toBe(200);
    expect(await status('bob', 'DELETE', path('com.acme/search', '/tags/reviewed'))).toBe(403);
    expect(await status('bob', 'DELETE', path('com.acme/search', '/versions/1.1.0'))).toBe(403);
    expect(await status('bob', 'DELETE', path('com.acme/search'))).toBe(403);
    // EDIT does not let bob hand out access: the grant routes take MANAGE.
    const handOut = await as('bob', 'POST', grantPath('users', 'cat', 'com.acme/search'), { permission: 'READ' });
    expect(handOut.status).toBe(403);

    // Explain tells the decision by the path, with the grant that made it.
    const query = new URLSearchParams({ username: 'bob', method: 'PATCH', path: path('com.acme/search'), body: '{}' });
    expect(await call('GET', `/api/2.0/mlflow/permissions/explain?${query}`)).toMatchObject({
      route: { pattern: `${MCP}/:namespace/:slug`, need: 'edit', resource: 'mcp_server' },
      resources: [{ kind: 'mcp_server', id: 'com.acme/search', effective: 'EDIT', rule: 'direct-grant' }],
      verdict: { allow: true, reason: 'direct-grant' },
    });

    // The resource side lists both users; ann (MANAGE) may read it too.
    const users = await call('GET', `/api/2.0/mlflow/permissions/mcp-servers/com.acme/search/users`, undefined, basicOf('ann'));
    expect((users.users as Array<{ username: string; permission: string }>).map((u) => `${u.username}:${u.permission}`).sort()).toEqual(['ann:MANAGE', 'bob:EDIT']);
  });

  it('a group grant reaches its members; NO_PERMISSIONS for the user wins over it', async () => {
    expect(await status('dan', 'GET', path('com.acme/search'))).toBe(403);
    await call('POST', grantPath('groups', 'tool-readers', 'com.acme/search'), { permission: 'READ' });
    expect(await status('dan', 'GET', path('com.acme/search'))).toBe(200);
    expect(await searched('dan')).toEqual(['com.acme/search']);
    await call('POST', grantPath('users', 'dan', 'com.acme/search'), { permission: 'NO_PERMISSIONS' });
    expect(await status('dan', 'GET', path('com.acme/search'))).toBe(403);
    expect(await searched('dan')).toEqual([]);
    await call('DELETE', grantPath('users', 'dan', 'com.acme/search'));
  });

  it('a first version makes its server (whoever may create), and its maker manages it', async () => {
    expect(await status('cat', 'POST', path('io.cat/fetch', '/versions'), version('io.cat/fetch', '0.1.0'))).toBe(200);
    expect((await call('GET', grantPath('users', 'cat', 'io.cat/fetch'))).permission).toMatchObject({ permission: 'MANAGE' });
    expect(await status('cat', 'PATCH', path('io.cat/fetch'), { description: 'fetch' })).toBe(200);
    // On a server that exists, a version is a change of it: EDIT, which bob does not hold here.
    expect(await status('bob', 'POST', path('io.cat/fetch', '/versions'), version('io.cat/fetch', '0.2.0'))).toBe(403);
    const versions = (await call('GET', path('io.cat/fetch', '/versions'))) as { mcp_server_versions: Array<{ version: string }> };
    expect(versions.mcp_server_versions.map((v) => v.version)).toEqual(['0.1.0']);
  });

  it('deleting a server forgets its grants: a new server of that name starts with its creator alone', async () => {
    // MLflow refuses to delete a server with an active version: a refused delete keeps the grants.
    expect(await status('ann', 'DELETE', path('com.acme/search'))).toBe(400);
    expect(await status('bob', 'GET', path('com.acme/search'))).toBe(200);
    expect(await status('ann', 'PATCH', path('com.acme/search', '/versions/1.1.0'), { status: 'deprecated' })).toBe(200);
    expect(await status('ann', 'DELETE', path('com.acme/search'))).toBe(200);
    const side = await call('GET', `/api/2.0/mlflow/permissions/mcp-servers/com.acme/search/users`);
    expect(side.users).toEqual([]);
    expect((await call('GET', `/api/2.0/mlflow/permissions/mcp-servers/com.acme/search/groups`)).groups).toEqual([]);
    expect(JSON.stringify(await call('GET', '/api/2.0/mlflow/permissions/audit?max_results=20'))).toContain('grant.drop-with-resource');
    expect(await status('cat', 'POST', MCP, { name: 'com.acme/search' })).toBe(200);
    expect(await status('bob', 'GET', path('com.acme/search'))).toBe(403);
    expect(await status('dan', 'GET', path('com.acme/search'))).toBe(403);
    expect((await call('GET', `/api/2.0/mlflow/permissions/mcp-servers/com.acme/search/users`)).users).toEqual([
      { resource_type: 'mcp_server', name: 'com.acme/search', username: 'cat', permission: 'MANAGE' },
    ]);
  });

  it('USE is not a level of MCP servers (no MCP route asks for it)', async () => {
    const use = await fetch(fg.url + grantPath('users', 'bob', 'com.acme/search'), {
      method: 'POST',
      headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ permission: 'USE' }),
    });
    expect(use.status).toBe(400);
    expect(((await use.json()) as { message: string }).message).toContain('READ, EDIT, MANAGE, NO_PERMISSIONS');
  });
});
