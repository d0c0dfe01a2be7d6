import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * A workspace membership a group rule (FLOWGATE_WORKSPACE_GROUP_RULES) gave, once an administrator
 * removes it, stays removed when flowgate starts again on the same store: the rule gives each group
 * its role once, whether at the group's creation or at the start after the rule was set. Against
 * MLflow 3.17.2 run with `--enable-workspaces`, so "removed" is seen as MLflow's refusal too.
 */
const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';
const RULES = 'team-*=team-*';

let mlflow: MlflowServer;
let fg: TestFlowgate;
let dir = '';
const { call, basicOf, withTokens } = jsonCaller(() => fg.url);

/** flowgate stopped and started again on the same store, with these rules. */
async function restartWith(rules: string | undefined): Promise<void> {
  await fg?.close();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, ...(rules === undefined ? {} : { FLOWGATE_WORKSPACE_GROUP_RULES: rules }) }, dir);
}
const groupsIn = async (workspace: string) => (await call('GET', `${V3}/permissions/workspaces/${workspace}/groups`)).groups;
/** The status of `who` creating an experiment in `workspace` (what a membership gives). */
const createIn = async (who: string, workspace: string) =>
  (
    await fetch(`${fg.url}${V2}/experiments/create`, {
      method: 'POST',
      headers: { Authorization: basicOf(who), 'Content-Type': 'application/json', 'X-MLFLOW-WORKSPACE': workspace },
      body: JSON.stringify({ name: `${who}-${workspace}-${Date.now()}` }),
    })
  ).status;
const ruleEntries = async () => (await fg.store.sql.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE actor = 'workspace-rule'"))!.n;

beforeAll(async () => {
  mlflow = await startMlflowServer({ args: ['--enable-workspaces'] });
  dir = mkdtempSync(join(tmpdir(), 'flowgate-ws-rule-'));
  // First without rules: `team-old` is a group made before the rule was set.
  await restartWith(undefined);
  for (const name of ['team-new', 'team-old']) await call('POST', `${V3}/workspaces`, { name });
  await withTokens(['ann', 'ola']);
  await call('POST', `${V2}/permissions/groups`, { group_name: 'team-old' });
  await call('POST', `${V2}/permissions/groups/team-old/users`, { username: 'ola' });
  expect(await groupsIn('team-old')).toEqual([]);
}, 240_000);

afterAll(async () => {
  await fg?.close();
  await mlflow?.stop();
  if (dir) removeDir(dir);
});

describe('a membership a workspace rule gave', () => {
  it('is given at the start after the rule is set (a group made before) and when a group is made', async () => {
    await restartWith(RULES);
    expect(await groupsIn('team-old')).toEqual([{ workspace: 'team-old', group_name: 'team-old', permission: 'USE' }]);
    await call('POST', `${V2}/permissions/groups`, { group_name: 'team-new' });
    await call('POST', `${V2}/permissions/groups/team-new/users`, { username: 'ann' });
    expect(await groupsIn('team-new')).toEqual([{ workspace: 'team-new', group_name: 'team-new', permission: 'USE' }]);
    expect(await createIn('ann', 'team-new')).toBe(200);
    expect(await createIn('ola', 'team-old')).toBe(200);
  });

  it('once an administrator removes it, stays removed across restarts on the same store', async () => {
    await call('DELETE', `${V3}/permissions/workspaces/team-new/groups/team-new`);
    await call('DELETE', `${V3}/permissions/workspaces/team-old/groups/team-old`);
    const given = await ruleEntries();
    for (let start = 0; start < 2; start++) {
      await restartWith(RULES);
      expect(await groupsIn('team-new')).toEqual([]);
      expect(await groupsIn('team-old')).toEqual([]);
      expect(await createIn('ann', 'team-new')).toBe(403);
      expect(await createIn('ola', 'team-old')).toBe(403);
    }
    // The rule wrote nothing more: no grant was given and taken again behind the administrator's back.
    expect(await ruleEntries()).toBe(given);
  });

  it('a role an administrator changed stays as they set it', async () => {
    await call('POST', `${V2}/permissions/groups`, { group_name: 'team-mgr' });
    await call('POST', `${V3}/workspaces`, { name: 'team-mgr' });
    expect(await groupsIn('team-mgr')).toEqual([{ workspace: 'team-mgr', group_name: 'team-mgr', permission: 'USE' }]);
    await call('PATCH', `${V3}/permissions/workspaces/team-mgr/groups/team-mgr`, { permission: 'MANAGE' });
    await restartWith(RULES);
    expect(await groupsIn('team-mgr')).toEqual([{ workspace: 'team-mgr', group_name: 'team-mgr', permission: 'MANAGE' }]);
  });

  it('a rule changed to another level gives that level once, as documented', async () => {
    await restartWith('team-*=team-*:MANAGE');
    expect(await groupsIn('team-new')).toEqual([{ workspace: 'team-new', group_name: 'team-new', permission: 'MANAGE' }]);
    await call('DELETE', `${V3}/permissions/workspaces/team-new/groups/team-new`);
    await restartWith('team-*=team-*:MANAGE');
    expect(await groupsIn('team-new')).toEqual([]);
  });

  it('a group deleted and made again is a new group, and gets its role again', async () => {
    await call('DELETE', `${V2}/permissions/groups/team-old`);
    await call('POST', `${V2}/permissions/groups`, { group_name: 'team-old' });
    expect(await groupsIn('team-old')).toEqual([{ workspace: 'team-old', group_name: 'team-old', permission: 'MANAGE' }]);
  });

  it('a rule lowered back from MANAGE to USE takes MANAGE away, once (a configuration rolled back)', async () => {
    const manages = async (who: string) =>
      (await fetch(`${fg.url}${V3}/permissions/workspaces/team-low/groups`, { headers: { Authorization: basicOf(who), 'X-MLFLOW-WORKSPACE': 'team-low' } })).status;
    await restartWith(RULES);
    await withTokens(['lee']);
    await call('POST', `${V3}/workspaces`, { name: 'team-low' });
    await call('POST', `${V2}/permissions/groups`, { group_name: 'team-low' });
    await call('POST', `${V2}/permissions/groups/team-low/users`, { username: 'lee' });
    expect(await groupsIn('team-low')).toEqual([{ workspace: 'team-low', group_name: 'team-low', permission: 'USE' }]);
    await restartWith('team-*=team-*:MANAGE');
    expect(await groupsIn('team-low')).toEqual([{ workspace: 'team-low', group_name: 'team-low', permission: 'MANAGE' }]);
    expect(await manages('lee')).toBe(200);
    // Back to the rule the group was first given (USE, recorded then): the group is a member again, not the workspace's administrators.
    await restartWith(RULES);
    expect(await groupsIn('team-low')).toEqual([{ workspace: 'team-low', group_name: 'team-low', permission: 'USE' }]);
    expect(await manages('lee')).toBe(403);
    expect(await createIn('lee', 'team-low')).toBe(200);
    // Given once: the next start with the same rule writes nothing.
    const given = await ruleEntries();
    await restartWith(RULES);
    expect(await groupsIn('team-low')).toEqual([{ workspace: 'team-low', group_name: 'team-low', permission: 'USE' }]);
    expect(await ruleEntries()).toBe(given);
  });
});
