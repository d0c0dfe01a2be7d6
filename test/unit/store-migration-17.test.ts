import { afterEach, describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/migrations.js';
import type { Sql } from '../../src/store/sql.js';
import { freshStore, storeAt } from '../helpers/test-store.js';

/**
 * Migration 17 records which workspace roles the group rules have given, and fills the record from
 * the rules' audit entries of before, so a membership an administrator removed before the upgrade
 * is not given again at the first start after it. The backfill statement runs on the engine the
 * suite runs on (SQLite, or PostgreSQL with FLOWGATE_TEST_STORE=postgres), in a store at version 17
 * (migration 20 keeps one row per group and workspace: test/unit/store-migration-20.test.ts).
 */
let store: { sql: Sql; close: () => Promise<void> } | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

const backfillOf = (dialect: 'sqlite' | 'postgres') => {
  const text = MIGRATIONS.find((m) => m.version === 17)![dialect];
  return text.slice(text.indexOf('INSERT INTO workspace_rule_grants'));
};

describe('migration 17: the workspace roles the rules gave', () => {
  it('records each role a rule gave a group that still exists, from the audit log, and nothing else', async () => {
    store = await storeAt(17);
    const { sql } = store;
    for (const name of ['team-a', 'team-b', 'k8s:ns', 'a', 'b/group:a', 'quiet']) await sql.run('INSERT INTO groups (name, created_at) VALUES (?, ?)', [name, 1]);
    const audit = (actor: string, action: string, target: string, value: string, at = 10) =>
      sql.run('INSERT INTO audit_log (at, actor, action, target, old_value, new_value) VALUES (?, ?, ?, ?, ?, ?)', [at, actor, action, target, null, JSON.stringify(value)]);
    await audit('workspace-rule', 'grant.create', 'workspace:team-a/group:team-a', 'USE', 10);
    await audit('workspace-rule', 'grant.update', 'workspace:team-a/group:team-a', 'MANAGE', 20);
    await audit('workspace-rule', 'grant.create', 'workspace:team-a/group:team-a', 'USE', 30);
    await audit('workspace-rule', 'grant.create', 'workspace:k8s-ns/group:k8s:ns', 'USE');
    // One target two groups could be read from: only the reading with a valid workspace counts.
    await audit('workspace-rule', 'grant.create', 'workspace:ws/group:b/group:a', 'USE');
    // Not the rule's, not a grant given, or a group gone since: nothing recorded.
    await audit('admin', 'grant.create', 'workspace:team-b/group:team-b', 'USE');
    await audit('workspace-rule', 'grant.delete', 'workspace:team-b/group:team-b', 'USE');
    await audit('workspace-rule', 'grant.create', 'workspace:team-gone/group:team-gone', 'USE');
    await audit('workspace-rule', 'grant.create', 'experiment:1/group:quiet', 'READ');

    await sql.run('DELETE FROM workspace_rule_grants');
    await sql.run(backfillOf(sql.dialect));
    const rows = await sql.all<{ name: string; workspace: string; permission: string; given_at: number }>(
      'SELECT g.name, r.workspace, r.permission, r.given_at FROM workspace_rule_grants r JOIN groups g ON g.id = r.group_id ORDER BY g.name, r.permission',
    );
    expect(rows.map((r) => ({ ...r, given_at: Number(r.given_at) }))).toEqual([
      { name: 'b/group:a', workspace: 'ws', permission: 'USE', given_at: 10 },
      { name: 'k8s:ns', workspace: 'k8s-ns', permission: 'USE', given_at: 10 },
      { name: 'team-a', workspace: 'team-a', permission: 'MANAGE', given_at: 20 },
      { name: 'team-a', workspace: 'team-a', permission: 'USE', given_at: 30 },
    ]);
  });

  it('a record goes with its group', async () => {
    store = await freshStore();
    const { sql } = store;
    await sql.run('INSERT INTO groups (name, created_at) VALUES (?, ?)', ['team-x', 1]);
    const id = (await sql.get<{ id: number }>('SELECT id FROM groups WHERE name = ?', ['team-x']))!.id;
    await sql.run('INSERT INTO workspace_rule_grants (group_id, workspace, permission, given_at) VALUES (?, ?, ?, ?)', [id, 'team-x', 'USE', 1]);
    await sql.run('DELETE FROM groups WHERE id = ?', [id]);
    expect(await sql.all('SELECT * FROM workspace_rule_grants')).toEqual([]);
  });
});
