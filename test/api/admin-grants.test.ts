import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const api = () => request(fg.url);
const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();
const grantCount = async () => ((await fg.store.sql.get('SELECT count(*) AS n FROM grants')) as { n: number }).n;
let bobToken = '';

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  for (const username of ['bob', 'dora']) await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username });
  await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'svc', is_service_account: true });
  await api().post('/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth()).send({ group_name: 'team-a' });
  bobToken = (
    await api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'bob', expiration: inDays(2) })
  ).body.token;
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

const KINDS = [
  { segment: 'experiments', id: '7', idField: 'experiment_id', bad: 'not-a-number', use: false },
  { segment: 'registered-models', id: 'churn model', idField: 'name', bad: '', use: false },
  { segment: 'prompts', id: 'summarizer', idField: 'name', bad: '', use: false },
  { segment: 'gateways/secrets', id: 'team key', idField: 'name', bad: '', use: true },
  { segment: 'gateways/model-definitions', id: 'gpt-4o team', idField: 'name', bad: '', use: true },
  { segment: 'gateways/endpoints', id: 'chat.v1', idField: 'name', bad: '', use: true },
] as const;
const GRANTEES = [
  { segment: 'users', name: 'dora', nameField: 'username' },
  { segment: 'groups', name: 'team-a', nameField: 'group_name' },
] as const;

describe.each(KINDS)('grants on $segment', (k) => {
  describe.each(GRANTEES)('for $segment', (g) => {
    const one = () => `/api/2.0/mlflow/permissions/${g.segment}/${encodeURIComponent(g.name)}/${k.segment}/${encodeURIComponent(k.id)}`;

    it('create, read, list, update, delete', async () => {
      const created = await api().post(one()).set('Authorization', adminAuth()).send({ permission: 'READ' });
      expect(created.status).toBe(201);
      expect(created.body.permission).toMatchObject({ [k.idField]: k.id, [g.nameField]: g.name, permission: 'READ' });
      expect((await api().post(one()).set('Authorization', adminAuth()).send({ permission: 'EDIT' })).status).toBe(409);
      const read = await api().get(one()).set('Authorization', adminAuth());
      expect(read.body.permission.permission).toBe('READ');
      const list = await api().get(`/ajax-api/2.0/mlflow/permissions/${g.segment}/${g.name}/${k.segment}`).set('Authorization', adminAuth());
      expect(list.body.permissions).toEqual([expect.objectContaining({ [k.idField]: k.id, permission: 'READ' })]);
      const side = await api().get(`/api/2.0/mlflow/permissions/${k.segment}/${encodeURIComponent(k.id)}/${g.segment}`).set('Authorization', adminAuth());
      expect(side.body[g.segment]).toEqual([expect.objectContaining({ [g.nameField]: g.name, permission: 'READ' })]);
      const updated = await api().patch(one()).set('Authorization', adminAuth()).send({ permission: 'NO_PERMISSIONS' });
      expect(updated.body.permission.permission).toBe('NO_PERMISSIONS');
      expect((await api().delete(one()).set('Authorization', adminAuth())).status).toBe(200);
      expect((await api().get(one()).set('Authorization', adminAuth())).status).toBe(404);
      expect((await api().delete(one()).set('Authorization', adminAuth())).status).toBe(404);
      expect((await api().patch(one()).set('Authorization', adminAuth()).send({ permission: 'READ' })).status).toBe(404);
    });

    it(k.use ? 'takes USE, between READ and EDIT' : 'refuses USE, saying which levels it takes, writing nothing', async () => {
      const before = await grantCount();
      const created = await api().post(one()).set('Authorization', adminAuth()).send({ permission: 'USE' });
      if (!k.use) {
        expect(created.status).toBe(400);
        expect(created.body.error_code).toBe('INVALID_PARAMETER_VALUE');
        expect(created.body.message).toMatch(/'permission' must be one of READ, EDIT, MANAGE, NO_PERMISSIONS \(the levels [a-z ]+ take\)/);
        await api().post(one()).set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
        const changed = await api().patch(one()).set('Authorization', adminAuth()).send({ permission: 'USE' });
        expect(changed.status).toBe(400);
        expect(changed.body.error_code).toBe('INVALID_PARAMETER_VALUE');
        expect((await api().get(one()).set('Authorization', adminAuth())).body.permission.permission).toBe('READ');
        await api().delete(one()).set('Authorization', adminAuth()).expect(200);
        expect(await grantCount()).toBe(before);
        return;
      }
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      expect(created.body.permission).toMatchObject({ [k.idField]: k.id, [g.nameField]: g.name, permission: 'USE' });
      const side = await api().get(`/api/2.0/mlflow/permissions/${k.segment}/${encodeURIComponent(k.id)}/${g.segment}`).set('Authorization', adminAuth());
      expect(side.body[g.segment]).toEqual([expect.objectContaining({ [g.nameField]: g.name, permission: 'USE' })]);
      await api().delete(one()).set('Authorization', adminAuth()).expect(200);
      expect(await grantCount()).toBe(before);
    });

    it('refuses bad permissions and unknown grantees, writing nothing', async () => {
      const before = (await grantCount());
      for (const body of [{ permission: 'WRITE' }, { permission: 'read' }, {}, { permission: 'READ', extra: 1 }]) {
        const res = await api().post(one()).set('Authorization', adminAuth()).send(body);
        expect(res.status).toBe(400);
        expect(res.body.error_code).toBe('INVALID_PARAMETER_VALUE');
      }
      const unknown = await api()
        .post(`/api/2.0/mlflow/permissions/${g.segment}/nobody/${k.segment}/${encodeURIComponent(k.id)}`)
        .set('Authorization', adminAuth())
        .send({ permission: 'READ' });
      if (g.segment === 'users') {
        expect(unknown.status).toBe(404);
        expect(unknown.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
        expect((await grantCount())).toBe(before);
      } else {
        // Groups mirror identity-provider roles: the team's grant may come before anyone holding the role signed in.
        expect(unknown.status, JSON.stringify(unknown.body)).toBe(201);
        const audit = (await fg.store.sql.all("SELECT actor FROM audit_log WHERE action = 'group.create' AND target = 'group:nobody' ORDER BY id DESC LIMIT 1"));
        expect(audit).toEqual([{ actor: 'admin' }]);
        expect((await api().delete(`/api/2.0/mlflow/permissions/groups/nobody`).set('Authorization', adminAuth())).status).toBe(200);
        expect((await grantCount())).toBe(before);
      }
    });
  });
});

describe('grants on the gateway by name', () => {
  it('are kept ahead of MLflow, like a model name it does not have yet: MLflow is not asked (grants prune drops them once its look-up says gone)', async () => {
    const asked = upstream.seen.length;
    for (const segment of ['secrets', 'model-definitions', 'endpoints']) {
      const path = `/api/2.0/mlflow/permissions/users/dora/gateways/${segment}/not-yet-${segment}`;
      expect((await api().post(path).set('Authorization', adminAuth()).send({ permission: 'USE' })).status).toBe(201);
      await api().delete(path).set('Authorization', adminAuth()).expect(200);
    }
    expect(upstream.seen.length).toBe(asked);
  });

  it('a manager of one endpoint grants on it, not on another; the Manage screens answer their own permission per gateway kind', async () => {
    await api().post('/api/2.0/mlflow/permissions/users/bob/gateways/endpoints/bobs-chat').set('Authorization', adminAuth()).send({ permission: 'MANAGE' }).expect(201);
    const bob = basic('bob', bobToken);
    expect((await api().post('/api/2.0/mlflow/permissions/users/dora/gateways/endpoints/bobs-chat').set('Authorization', bob).send({ permission: 'USE' })).status).toBe(201);
    expect((await api().post('/api/2.0/mlflow/permissions/users/dora/gateways/endpoints/admin-chat').set('Authorization', bob).send({ permission: 'USE' })).status).toBe(403);
    // The same name under another gateway kind is another resource.
    expect((await api().post('/api/2.0/mlflow/permissions/users/dora/gateways/secrets/bobs-chat').set('Authorization', bob).send({ permission: 'USE' })).status).toBe(403);
    const mine = await api().get('/ajax-api/2.0/mlflow/permissions/ui/my-permissions/gateways/endpoints?id=bobs-chat&id=admin-chat').set('Authorization', bob);
    expect(mine.status).toBe(200);
    expect(mine.body.permissions['bobs-chat']).toMatchObject({ permission: 'MANAGE', source: 'direct' });
    expect(mine.body.permissions['admin-chat']).toMatchObject({ permission: 'NO_PERMISSIONS', source: 'none' });
    expect((await api().get('/ajax-api/2.0/mlflow/permissions/ui/gateways/endpoints/bobs-chat/grants').set('Authorization', bob)).body.grants).toEqual(
      expect.arrayContaining([{ grantee_type: 'user', name: 'dora', permission: 'USE' }]),
    );
    expect((await api().get('/ajax-api/2.0/mlflow/permissions/ui/my-permissions/widgets?id=1').set('Authorization', bob)).status).toBe(400);
  });

  it('pattern grants take USE on the gateway kinds only', async () => {
    const post = (resource_type: string, permission: string) =>
      api().post('/api/2.0/mlflow/permissions/groups/team-a/patterns').set('Authorization', adminAuth()).send({ resource_type, pattern: 'team-a-*', permission });
    for (const kind of ['experiment', 'registered_model', 'prompt']) {
      const r = await post(kind, 'USE');
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringContaining('must be one of READ, EDIT, MANAGE, NO_PERMISSIONS') });
    }
    for (const kind of ['gateway_secret', 'gateway_model_definition', 'gateway_endpoint']) {
      expect((await post(kind, 'USE')).status).toBe(201);
      await api().delete(`/api/2.0/mlflow/permissions/groups/team-a/patterns?resource_type=${kind}&pattern=team-a-*`).set('Authorization', adminAuth()).expect(200);
    }
  });

  it('a batch holding USE on an experiment is refused whole', async () => {
    const before = await grantCount();
    const r = await api()
      .post('/api/2.0/mlflow/permissions/batch')
      .set('Authorization', adminAuth())
      .send({
        calls: [
          { method: 'POST', path: 'permissions/users/dora/gateways/endpoints/batch-chat', body: { permission: 'USE' } },
          { method: 'POST', path: 'permissions/users/dora/experiments/77', body: { permission: 'USE' } },
        ],
      });
    expect(r.status).toBe(400);
    expect(r.body.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(await grantCount()).toBe(before);
  });
});

describe('who may manage grants', () => {
  it('refuses a plain user, allows a holder of MANAGE on that resource only', async () => {
    const path = '/api/2.0/mlflow/permissions/users/dora/experiments/42';
    expect((await api().post(path).set('Authorization', basic('bob', bobToken)).send({ permission: 'READ' })).status).toBe(403);
    await api().post('/api/2.0/mlflow/permissions/users/bob/experiments/42').set('Authorization', adminAuth()).send({ permission: 'MANAGE' });
    const ok = await api().post(path).set('Authorization', basic('bob', bobToken)).send({ permission: 'READ' });
    expect(ok.status).toBe(201);
    const side = await api().get('/api/2.0/mlflow/permissions/experiments/42/users').set('Authorization', basic('bob', bobToken));
    expect(side.status).toBe(200);
    expect((await api().post('/api/2.0/mlflow/permissions/users/dora/experiments/43').set('Authorization', basic('bob', bobToken)).send({ permission: 'READ' })).status).toBe(403);
    expect((await api().get('/api/2.0/mlflow/permissions/users').set('Authorization', basic('bob', bobToken))).status).toBe(403);
  });

  it('MANAGE through a group counts; a direct NO_PERMISSIONS overrides it', async () => {
    await api().post('/api/2.0/mlflow/permissions/groups/team-a/users').set('Authorization', adminAuth()).send({ username: 'bob' });
    await api().post('/api/2.0/mlflow/permissions/groups/team-a/registered-models/shared').set('Authorization', adminAuth()).send({ permission: 'MANAGE' });
    const path = '/api/2.0/mlflow/permissions/users/dora/registered-models/shared';
    expect((await api().post(path).set('Authorization', basic('bob', bobToken)).send({ permission: 'READ' })).status).toBe(201);
    await api().post('/api/2.0/mlflow/permissions/users/bob/registered-models/shared').set('Authorization', adminAuth()).send({ permission: 'NO_PERMISSIONS' });
    expect((await api().patch(path).set('Authorization', basic('bob', bobToken)).send({ permission: 'EDIT' })).status).toBe(403);
  });
});

describe('groups', () => {
  it('lists groups and members; adds and removes members', async () => {
    const groups = await api().get('/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth());
    expect(groups.body.groups.map((g: { name: string }) => g.name)).toContain('team-a');
    await api().post('/api/2.0/mlflow/permissions/groups/team-a/users').set('Authorization', adminAuth()).send({ username: 'dora' });
    const members = await api().get('/api/2.0/mlflow/permissions/groups/team-a/users').set('Authorization', adminAuth());
    expect(members.body.users.map((u: { username: string }) => u.username)).toEqual(['bob', 'dora']);
    const dup = await api().post('/api/2.0/mlflow/permissions/groups/team-a/users').set('Authorization', adminAuth()).send({ username: 'dora' });
    expect(dup.status).toBe(409);
    expect((await api().delete('/api/2.0/mlflow/permissions/groups/team-a/users/dora').set('Authorization', adminAuth())).status).toBe(200);
    expect((await api().delete('/api/2.0/mlflow/permissions/groups/team-a/users/dora').set('Authorization', adminAuth())).status).toBe(404);
    expect((await api().get('/api/2.0/mlflow/permissions/groups/nope/users').set('Authorization', adminAuth())).status).toBe(404);
    expect((await api().post('/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth()).send({ group_name: 'team-a' })).status).toBe(409);
  });

  it('refuses to add a service account to a group with a clear 400', async () => {
    const res = await api().post('/api/2.0/mlflow/permissions/groups/team-a/users').set('Authorization', adminAuth()).send({ username: 'svc' });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/service accounts cannot be added to groups/);
    const members = await api().get('/api/2.0/mlflow/permissions/groups/team-a/users').set('Authorization', adminAuth());
    expect(members.body.users.map((u: { username: string }) => u.username)).not.toContain('svc');
    const direct = await api().post('/api/2.0/mlflow/permissions/users/svc/experiments/7').set('Authorization', adminAuth()).send({ permission: 'EDIT' });
    expect(direct.status).toBe(201);
  });
});

describe('audit log', () => {
  it('records changes with actor, action, target, old and new values; admins only', async () => {
    const res = await api().get('/api/2.0/mlflow/permissions/audit?max_results=500').set('Authorization', adminAuth());
    expect(res.status).toBe(200);
    const entries = res.body.entries as Array<Record<string, unknown>>;
    expect(entries.find((e) => e.action === 'grant.update')).toMatchObject({ actor: 'admin', old_value: 'READ', new_value: 'NO_PERMISSIONS' });
    expect(entries.find((e) => e.action === 'user.create' && e.target === 'user:svc')).toMatchObject({
      new_value: expect.objectContaining({ is_service_account: true }),
    });
    expect(entries.find((e) => e.action === 'grant.create' && e.actor === 'bob')).toBeDefined();
    const adds = entries.filter((e) => e.action === 'group.member.add').map((e) => [e.target, e.new_value]);
    expect(adds).toContainEqual(['group:team-a', { username: 'bob' }]);
    expect(entries.find((e) => e.action === 'token.issue')).toMatchObject({ target: 'user:bob' });
    expect(JSON.stringify(entries)).not.toContain(bobToken);
    const page = await api().get('/api/2.0/mlflow/permissions/audit?max_results=2').set('Authorization', adminAuth());
    expect(page.body.entries).toHaveLength(2);
    const next = await api().get(`/api/2.0/mlflow/permissions/audit?max_results=2&page_token=${page.body.next_page_token}`).set('Authorization', adminAuth());
    expect(next.body.entries[0].id).toBeLessThan(page.body.entries[1].id);
    expect((await api().get('/api/2.0/mlflow/permissions/audit?max_results=0').set('Authorization', adminAuth())).status).toBe(400);
    expect((await api().get('/api/2.0/mlflow/permissions/audit').set('Authorization', basic('bob', bobToken))).status).toBe(403);
  });
});

describe('a grant on a name MLflow can never hold', () => {
  const grantPath = (segment: string, id: string) => `/api/2.0/mlflow/permissions/users/dora/${segment}/${id}`;
  const auditCount = async () => ((await fg.store.sql.get('SELECT count(*) AS n FROM audit_log')) as { n: number }).n;

  // Each a name MLflow's create refuses (and its look-up answers with a 400, so `grants prune` would keep the grant as unknown forever).
  it.each([
    ['workspaces', 'Team%20A', /must match the pattern/],
    ['workspaces', 'ws_a', /must match the pattern/],
    ['workspaces', 'a', /between 2 and 63 characters/],
    ['workspaces', 'api', /is reserved/],
    ['mcp-servers', 'bad!ns/tools', /reverse-dns namespace/],
    ['mcp-servers', 'com.acme/versions', /reverse-dns namespace/],
    ['registered-models', 'a%2Fb', /must not contain '\/' or ':'/],
    ['registered-models', 'team%3Amodel', /must not contain '\/' or ':'/],
    ['registered-models', '%20%20', /must not be blank/],
    ['registered-models', '%E3%80%80', /must not be blank/],
    ['registered-models', '..team', /start with '\.\.'/],
    ['prompts', 'a%2Fb', /must not contain '\/' or ':'/],
    ['gateways/endpoints', '%20', /letters, numbers, underscores, hyphens and dots/],
    ['gateways/endpoints', 'chat%20v1', /letters, numbers, underscores, hyphens and dots/],
  ])('POST …/%s/%s is a 400 INVALID_PARAMETER_VALUE, nothing kept', async (segment, id, message) => {
    const [grants, audit] = [await grantCount(), await auditCount()];
    const res = await api().post(grantPath(segment, id)).set('Authorization', adminAuth()).send({ permission: 'MANAGE' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringMatching(message) });
    expect([await grantCount(), await auditCount()]).toEqual([grants, audit]);
  });

  // Names MLflow takes, however odd: only its own rules refuse.
  it.each([
    ['workspaces', 'ws-a'],
    ['mcp-servers', 'com.acme/tools'],
    ['registered-models', 'a..'],
    ['registered-models', '.team'],
    ['registered-models', '%EF%BB%BF'],
    ['registered-models', 'a%5Cb'],
    ['prompts', 'team%20prompt'],
    ['gateways/endpoints', 'chat_v1-2.x'],
    ['gateways/secrets', 'a%2Fb%3Ac'],
    ['gateways/secrets', '%20'],
    ['gateways/model-definitions', 'gpt%3A4o%20team'],
  ])('POST …/%s/%s is still a 201', async (segment, id) => {
    const res = await api().post(grantPath(segment, id)).set('Authorization', adminAuth()).send({ permission: 'MANAGE' });
    expect(res.status).toBe(201);
    expect((await api().delete(grantPath(segment, id)).set('Authorization', adminAuth())).status).toBe(200);
  });

  it("MLflow's roles/permissions/add refuses such a name too", async () => {
    const role = await api().post('/api/3.0/mlflow/roles/create').set('Authorization', adminAuth()).send({ workspace: 'default', name: 'bad-names' });
    expect(role.status).toBe(200);
    for (const [resource_type, resource_pattern] of [
      ['mcp_server', 'bad'],
      ['registered_model', 'a:b'],
      ['prompt', '..'],
    ]) {
      const grants = await grantCount();
      const res = await api()
        .post('/api/3.0/mlflow/roles/permissions/add')
        .set('Authorization', adminAuth())
        .send({ role_id: role.body.role.id, resource_type, resource_pattern, permission: 'READ' });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringContaining(`Invalid resource id '${resource_pattern}'`) });
      expect(await grantCount()).toBe(grants);
    }
  });

  it('a grant kept before the rules can still be read, changed and removed', async () => {
    const dora = ((await fg.store.sql.get('SELECT id FROM users WHERE username = ?', ['dora'])) as { id: number }).id;
    for (const name of ['a/b', 'a:b'])
      await fg.store.sql.run("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('registered_model', ?, ?, 'READ', 0, 0)", [name, dora]);
    fg = await fg.restart();
    const ui = await api().get('/api/2.0/mlflow/permissions/ui/registered-models/a%3Ab/grants').set('Authorization', adminAuth());
    expect(ui.body.grants).toEqual([expect.objectContaining({ name: 'dora', permission: 'READ' })]);
    // MLflow's per-user revoke too.
    const revoke = { username: 'dora', resource_type: 'registered_model', resource_id: 'a:b' };
    expect((await api().post('/api/3.0/mlflow/users/permissions/revoke').set('Authorization', adminAuth()).send(revoke)).status).toBe(200);
    const regrant = await api().post('/api/3.0/mlflow/users/permissions/grant').set('Authorization', adminAuth()).send({ ...revoke, permission: 'READ' });
    expect(regrant.status).toBe(400);
    const one = grantPath('registered-models', 'a%2Fb');
    expect((await api().get(one).set('Authorization', adminAuth())).body.permission).toMatchObject({ name: 'a/b', permission: 'READ' });
    expect((await api().patch(one).set('Authorization', adminAuth()).send({ permission: 'EDIT' })).status).toBe(200);
    expect((await api().delete(one).set('Authorization', adminAuth())).status).toBe(200);
    expect((await api().post(one).set('Authorization', adminAuth()).send({ permission: 'READ' })).status).toBe(400);
  });
});

describe('a pattern grant holding a control character', () => {
  const patterns = '/api/2.0/mlflow/permissions/users/dora/patterns';
  const patternCount = async () => ((await fg.store.sql.get('SELECT count(*) AS n FROM pattern_grants')) as { n: number }).n;

  it.each(['a\u0007*', 'team\n*', 'x\u007f?', '\u001b[1m*'])('%j is a 400 INVALID_PARAMETER_VALUE, nothing kept', async (pattern) => {
    const before = await patternCount();
    const res = await api().post(patterns).set('Authorization', adminAuth()).send({ resource_type: 'registered_model', pattern, permission: 'READ' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringContaining('must not contain control characters') });
    expect(await patternCount()).toBe(before);
  });

  it('one kept before they were refused still loads (the others keep working), lists and is removed', async () => {
    const dora = ((await fg.store.sql.get('SELECT id FROM users WHERE username = ?', ['dora'])) as { id: number }).id;
    await fg.store.sql.run("INSERT INTO pattern_grants (resource_kind, pattern, user_id, permission, created_at, updated_at) VALUES ('registered_model', 'a\u0007*', ?, 'READ', 0, 0)", [dora]);
    fg = await fg.restart();
    expect((await api().post(patterns).set('Authorization', adminAuth()).send({ resource_type: 'prompt', pattern: 'team-*', permission: 'READ' })).status).toBe(201);
    const listed = await api().get(patterns).set('Authorization', adminAuth());
    expect(listed.body.patterns.map((p: { pattern: string }) => p.pattern).sort()).toEqual(['a\u0007*', 'team-*']);
    const gone = await api().delete(`${patterns}?resource_type=registered_model&pattern=${encodeURIComponent('a\u0007*')}`).set('Authorization', adminAuth());
    expect(gone.status).toBe(200);
  });
});
