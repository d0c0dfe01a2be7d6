import { afterEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createGrantWriter } from '../../src/authz/grant-writer.js';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Sql } from '../../src/store/sql.js';
import { createWorkspaceGroupRules, parseWorkspaceGroupRules, type WorkspaceGroupRule } from '../../src/workspaces/group-rules.js';
import { createRuleGrantsGiven } from '../../src/workspaces/rule-grants-given.js';
import { storeAt } from '../helpers/test-store.js';

/**
 * Migration 20 keys the record of what the workspace group rules gave by group and workspace (it was
 * by level as well, so a rule lowered back from MANAGE to USE found USE recorded and changed
 * nothing). Of an older store's rows for one group and workspace the newest `given_at` stays: the
 * level the rules last gave. On the engine the suite runs on (SQLite, or PostgreSQL with
 * FLOWGATE_TEST_STORE=postgres).
 */
let store: Awaited<ReturnType<typeof storeAt>> | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

const groupId = async (sql: Sql, name: string) => (await sql.get<{ id: number }>('SELECT id FROM groups WHERE name = ?', [name]))!.id;
const records = async (sql: Sql) =>
  (
    await sql.all<{ name: string; workspace: string; permission: string; given_at: number }>(
      'SELECT g.name, r.workspace, r.permission, r.given_at FROM workspace_rule_grants r JOIN groups g ON g.id = r.group_id ORDER BY g.name, r.workspace',
    )
  ).map((r) => ({ ...r, given_at: Number(r.given_at) }));

describe('migration 20: one record per group and workspace', () => {
  it('keeps the newest row of a group and workspace (MANAGE of two as new), and every other row', async () => {
    store = await storeAt(19);
    const old = store.sql;
    for (const name of ['team-a', 'team-b', 'team-c']) await old.run('INSERT INTO groups (name, created_at) VALUES (?, ?)', [name, 1]);
    const row = async (group: string, workspace: string, permission: string, at: number) =>
      old.run('INSERT INTO workspace_rule_grants (group_id, workspace, permission, given_at) VALUES (?, ?, ?, ?)', [await groupId(old, group), workspace, permission, at]);
    await row('team-a', 'team-a', 'USE', 10); // raised to MANAGE, then lowered back: the bug's state
    await row('team-a', 'team-a', 'MANAGE', 20);
    await row('team-a', 'other', 'USE', 5);
    await row('team-b', 'team-b', 'MANAGE', 30); // lowered to USE with no MANAGE given before
    await row('team-b', 'team-b', 'USE', 40);
    await row('team-c', 'team-c', 'USE', 7);
    await row('team-c', 'team-c', 'MANAGE', 7);

    const sql = await store.upgrade();
    expect(await records(sql)).toEqual([
      { name: 'team-a', workspace: 'other', permission: 'USE', given_at: 5 },
      { name: 'team-a', workspace: 'team-a', permission: 'MANAGE', given_at: 20 },
      { name: 'team-b', workspace: 'team-b', permission: 'USE', given_at: 40 },
      { name: 'team-c', workspace: 'team-c', permission: 'MANAGE', given_at: 7 },
    ]);
    // The new key: a second row for a group and workspace is refused, and a record replaces the level.
    await expect(
      sql.run('INSERT INTO workspace_rule_grants (group_id, workspace, permission, given_at) VALUES (?, ?, ?, ?)', [await groupId(sql, 'team-b'), 'team-b', 'MANAGE', 50]),
    ).rejects.toThrow();
    await createRuleGrantsGiven(sql, () => 60).record(await groupId(sql, 'team-b'), 'team-b', 'MANAGE');
    expect((await records(sql)).find((r) => r.name === 'team-b')).toEqual({ name: 'team-b', workspace: 'team-b', permission: 'MANAGE', given_at: 60 });
    // A record still goes with its group.
    await sql.run("DELETE FROM groups WHERE name = 'team-a'");
    expect((await records(sql)).map((r) => r.name)).toEqual(['team-b', 'team-c']);
  });

  it('a group an older flowgate left MANAGE under a rule lowered back to USE is lowered at the first start after the upgrade', async () => {
    store = await storeAt(19);
    const old = store.sql;
    await old.run("INSERT INTO groups (name, created_at) VALUES ('team-a', 1)");
    const id = await groupId(old, 'team-a');
    await createGrantsRepo(old).insert({ type: 'group', id }, 'workspace', 'team-a', 'MANAGE');
    await old.run("INSERT INTO workspace_rule_grants (group_id, workspace, permission, given_at) VALUES (?, 'team-a', 'USE', 10), (?, 'team-a', 'MANAGE', 20)", [id, id]);

    const sql = await store.upgrade();
    const grants = createGrantsRepo(sql);
    await createWorkspaceGroupRules({
      rules: parseWorkspaceGroupRules('team-*=team-*') as WorkspaceGroupRule[],
      grants,
      writer: createGrantWriter({ sql, grants, audit: createAuditLog(sql), grantsChanged: async () => undefined }),
      directory: createDirectory(sql),
      given: createRuleGrantsGiven(sql),
      logger: { warn() {} } as never,
    }).reconcile();
    expect(await grants.get({ type: 'group', id }, 'workspace', 'team-a')).toBe('USE');
  });
});
