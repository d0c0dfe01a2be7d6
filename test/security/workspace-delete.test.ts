import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { workspaceCaller } from '../helpers/admin-calls.js';
import { startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * The attacker's view of deleting a workspace, against the real MLflow run with `--enable-workspaces`:
 * a workspace made again under a deleted one's name must not hand the old one's people their roles back
 * (as a Kubernetes namespace made again does not bring back the old one's RoleBindings).
 * - mia is a member of ws-x (and of ws-y), max its administrator, the team-x group a member through a
 *   group rule; mia holds a grant on a model in ws-x and a pattern grant made there.
 * - A delete MLflow refuses (RESTRICT while ws-x holds resources; the default workspace) changes nothing.
 * - A delete MLflow makes (CASCADE) drops every grant of ws-x and in it, audited once; an administrator
 *   who makes ws-x again gives nobody anything: mia cannot read it, is not offered it in the picker,
 *   cannot create there, and a model made there under the old name is not hers; max manages nothing;
 *   the group rule does not give it back, not even at the next start. ws-y is untouched.
 * - SET_DEFAULT: the moved resources keep none of the grants they had in the deleted workspace.
 */
const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';

describe('deleting a workspace, attacked', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  const { withTokens, send, ok, auditMark } = workspaceCaller(() => fg.url);
  const status = async (who: string, ws: string | undefined, method: string, path: string, body?: unknown) => (await send(who, ws, method, path, body)).status;
  const newAudit = async (since: number) =>
    ((await ok('admin', undefined, 'GET', `${V2}/permissions/audit?max_results=50`)).entries as Array<{ id: number; actor: string; action: string; target: string; old_value: unknown }>)
      .filter((e) => e.id > since)
      .map((e) => ({ actor: e.actor, action: e.action, target: e.target, old_value: e.old_value }));
  /** The workspaces the caller's picker offers. */
  const picker = async (who: string) => ((await ok(who, undefined, 'GET', `${V3}/workspaces`)).workspaces as Array<{ name: string }>).map((w) => w.name).sort();
  const members = async (ws: string) =>
    [
      ...((await ok('admin', undefined, 'GET', `${V3}/permissions/workspaces/${ws}/users`)).users as Array<{ username: string; permission: string }>).map((u) => `${u.username}:${u.permission}`),
      ...((await ok('admin', undefined, 'GET', `${V3}/permissions/workspaces/${ws}/groups`)).groups as Array<{ name?: string; group_name?: string; permission: string }>).map(
        (g) => `group ${g.name ?? g.group_name}:${g.permission}`,
      ),
    ].sort();
  /** What mia (and max, and tia through team-x) may do in ws-x. */
  const standing = async () => ({
    miaReads: await status('mia', undefined, 'GET', `${V3}/workspaces/ws-x`),
    tiaReads: await status('tia', undefined, 'GET', `${V3}/workspaces/ws-x`),
    miaCreates: await status('mia', 'ws-x', 'POST', `${V2}/experiments/create`, { name: `probe-${Math.random().toString(36).slice(2)}` }),
    maxManages: await status('max', undefined, 'GET', `${V3}/permissions/workspaces/ws-x/users`),
    miaPicker: (await picker('mia')).includes('ws-x'),
    tiaPicker: (await picker('tia')).includes('ws-x'),
  });

  beforeAll(async () => {
    mlflow = await startMlflowServer({ args: ['--enable-workspaces'] });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DEFAULT_PERMISSION: 'READ', FLOWGATE_WORKSPACE_GROUP_RULES: 'team-x=ws-x' });
    await withTokens(['mia', 'max', 'tia']);
    for (const name of ['ws-x', 'ws-y', 'ws-z']) await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-x/users`, { username: 'mia', permission: 'USE' });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-x/users`, { username: 'max', permission: 'MANAGE' });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-y/users`, { username: 'mia', permission: 'USE' });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-z/users`, { username: 'mia', permission: 'USE' });
    // The group rule makes team-x a member of ws-x as the group appears.
    await ok('admin', undefined, 'POST', `${V2}/permissions/groups`, { group_name: 'team-x' });
    await ok('admin', undefined, 'POST', `${V2}/permissions/groups/team-x/users`, { username: 'tia' });
    // Resources in ws-x: mia's experiment, a model of the administrator's she is granted MANAGE on, and a pattern grant made there.
    await ok('mia', 'ws-x', 'POST', `${V2}/experiments/create`, { name: 'mia-exp' });
    await ok('admin', 'ws-x', 'POST', `${V2}/registered-models/create`, { name: 'm0' });
    await ok('admin', 'ws-x', 'POST', `${V2}/permissions/users/mia/registered-models/m0`, { permission: 'MANAGE' });
    await ok('admin', 'ws-x', 'POST', `${V2}/permissions/users/mia/patterns`, { resource_type: 'registered_model', pattern: 'm*', permission: 'MANAGE' });
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
  });

  it('a delete MLflow refuses (RESTRICT while resources remain; the default workspace) changes nothing', async () => {
    const before = await standing();
    expect(before).toMatchObject({ miaReads: 200, tiaReads: 200, miaCreates: 200, maxManages: 200, miaPicker: true, tiaPicker: true });
    const membersBefore = await members('ws-x');
    expect(membersBefore).toEqual(['group team-x:USE', 'max:MANAGE', 'mia:USE']);
    const mark = await auditMark();

    // MLflow 3.17 answers a RESTRICT refusal 500 INVALID_STATE, and the default workspace 400.
    for (const path of [`${V3}/workspaces/ws-x`, `${V3}/workspaces/ws-x?mode=RESTRICT`]) {
      const refused = await send('admin', undefined, 'DELETE', path);
      expect(refused.status, `${path}: ${refused.text}`).toBeGreaterThanOrEqual(400);
      expect(refused.json.error_code, refused.text).toBe('INVALID_STATE');
    }
    const reserved = await send('admin', undefined, 'DELETE', `${V3}/workspaces/default?mode=CASCADE`);
    expect(reserved.status, reserved.text).toBe(400);

    expect(await newAudit(mark)).toEqual([]);
    expect(await members('ws-x')).toEqual(membersBefore);
    expect(await standing()).toMatchObject({ miaReads: 200, tiaReads: 200, miaCreates: 200, maxManages: 200, miaPicker: true, tiaPicker: true });
    expect(await status('mia', 'ws-x', 'PATCH', `${V2}/registered-models/update`, { name: 'm0', description: 'still mine' })).toBe(200);
    expect(await status('mia', undefined, 'GET', `${V3}/workspaces/default`)).toBe(200);
  });

  it('a delete MLflow makes drops every grant of the workspace and in it: made again, it gives the old members, administrators and groups nothing', async () => {
    const mark = await auditMark();
    const deleted = await send('admin', undefined, 'DELETE', `${V3}/workspaces/ws-x?mode=CASCADE`);
    expect(deleted.status, deleted.text).toBe(204);
    await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name: 'ws-x' });
    expect(await members('ws-x')).toEqual([]);
    const after = await standing();
    expect(after).toEqual({ miaReads: 403, tiaReads: 403, miaCreates: 403, maxManages: 403, miaPicker: false, tiaPicker: false });
    // One entry says what went: mia, max and team-x; the creators' MANAGE on mia-exp, m0 and the two probes, and mia's grant on m0; her pattern.
    expect((await newAudit(mark)).filter((e) => e.action !== 'grant.creator')).toEqual([
      { actor: 'admin', action: 'grant.drop-with-workspace', target: 'workspace:ws-x', old_value: { members: 3, grants: 5, pattern_grants: 1 } },
    ]);
    // A model made there again under the old name is nobody's but its maker's: not by her old grant, not by her old pattern.
    await ok('admin', 'ws-x', 'POST', `${V2}/registered-models/create`, { name: 'm0' });
    await ok('admin', 'ws-x', 'POST', `${V2}/registered-models/create`, { name: 'm1' });
    for (const name of ['m0', 'm1']) {
      expect(await status('mia', 'ws-x', 'GET', `${V2}/registered-models/get?name=${name}`), name).toBe(403);
      expect(await status('mia', 'ws-x', 'DELETE', `${V2}/registered-models/delete`, { name }), name).toBe(403);
    }
    // ws-y kept hers.
    expect(await picker('mia')).toEqual(['default', 'ws-y', 'ws-z']);
    expect(await status('mia', undefined, 'GET', `${V3}/workspaces/ws-y`)).toBe(200);

    // The group rule gave team-x its role once; the workspace's deletion took it, and a start does not give it back.
    fg = await fg.restart();
    expect(await members('ws-x')).toEqual([]);
    expect(await status('tia', undefined, 'GET', `${V3}/workspaces/ws-x`)).toBe(403);
    // An administrator gives roles in the new workspace as in any other.
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-x/users`, { username: 'mia', permission: 'USE' });
    expect(await status('mia', undefined, 'GET', `${V3}/workspaces/ws-x`)).toBe(200);
  });

  it('SET_DEFAULT: what moves into the default workspace keeps none of the grants it had in the deleted one', async () => {
    await ok('mia', 'ws-z', 'POST', `${V2}/registered-models/create`, { name: 'moved-model' });
    expect(await status('mia', 'ws-z', 'PATCH', `${V2}/registered-models/update`, { name: 'moved-model', description: 'mine' })).toBe(200);
    const deleted = await send('admin', undefined, 'DELETE', `${V3}/workspaces/ws-z?mode=SET_DEFAULT`);
    expect(deleted.status, deleted.text).toBe(204);
    // In default she has default's rules (READ for everyone here), not her creator's MANAGE.
    expect(await status('mia', undefined, 'GET', `${V2}/registered-models/get?name=moved-model`)).toBe(200);
    expect(await status('mia', undefined, 'PATCH', `${V2}/registered-models/update`, { name: 'moved-model', description: 'still mine?' })).toBe(403);
    expect(await status('mia', undefined, 'DELETE', `${V2}/registered-models/delete`, { name: 'moved-model' })).toBe(403);
    await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name: 'ws-z' });
    expect(await picker('mia')).toEqual(['default', 'ws-x', 'ws-y']);
  });
});
