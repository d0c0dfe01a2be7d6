import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createGrantWriter } from '../../src/authz/grant-writer.js';
import { createGrantsRepo, type GrantsRepo } from '../../src/authz/grants-repo.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Sql } from '../../src/store/sql.js';
import { createWorkspaceGroupRules, parseWorkspaceGroupRules, type WorkspaceGroupRule } from '../../src/workspaces/group-rules.js';
import { createRuleGrantsGiven } from '../../src/workspaces/rule-grants-given.js';
import { freshStore } from '../helpers/test-store.js';

/**
 * `createWorkspaceGroupRules` over the real store, on whichever engine the suite runs on (SQLite, or
 * PostgreSQL with FLOWGATE_TEST_STORE=postgres): each start (`reconcile`) gives a group the level its
 * rule names once, recorded per group and workspace; a rule whose level changes, raised or lowered
 * back, gives the new level once; what an administrator removed or changed stays as they left it.
 */
let sql: Sql;
let close: () => Promise<void>;
let grants: GrantsRepo;
let writer: ReturnType<typeof createGrantWriter>;
let clock = 1;
const team = { grantee: { type: 'group' as const, id: 0 }, name: 'team-a' };
const ref = { kind: 'workspace' as const, id: 'team-a' };

/** A start of flowgate with these rules. */
const start = (rules: string) =>
  createWorkspaceGroupRules({
    rules: parseWorkspaceGroupRules(rules) as WorkspaceGroupRule[],
    grants,
    writer,
    directory: createDirectory(sql),
    given: createRuleGrantsGiven(sql, () => clock++),
    logger: { warn() {} } as never,
  }).reconcile();
const held = () => grants.get(team.grantee, 'workspace', 'team-a');
const ruleWrites = async () => (await sql.get<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE actor = 'workspace-rule'"))!.n;

beforeEach(async () => {
  ({ sql, close } = await freshStore());
  await sql.run("INSERT INTO groups (name, created_at) VALUES ('team-a', 0)");
  team.grantee.id = (await sql.get<{ id: number }>("SELECT id FROM groups WHERE name = 'team-a'"))!.id;
  grants = createGrantsRepo(sql);
  writer = createGrantWriter({ sql, grants, audit: createAuditLog(sql), grantsChanged: async () => undefined });
});
afterEach(() => close());

describe('workspace group rules across starts', () => {
  it('a rule raised to MANAGE and lowered back to USE gives USE again, once', async () => {
    await start('team-*=team-*');
    expect(await held()).toBe('USE');
    await start('team-*=team-*:MANAGE');
    expect(await held()).toBe('MANAGE');
    await start('team-*=team-*');
    expect(await held()).toBe('USE');
    const writes = await ruleWrites();
    await start('team-*=team-*');
    expect(await ruleWrites()).toBe(writes);
    expect(await sql.all('SELECT workspace, permission FROM workspace_rule_grants')).toEqual([{ workspace: 'team-a', permission: 'USE' }]);
  });

  it('a role an administrator changed or removed stays as they left it while the rule stays; a rule changed gives its new level once', async () => {
    await start('team-*=team-*:MANAGE');
    await writer.update('admin', team, ref, 'MANAGE', 'USE');
    await start('team-*=team-*:MANAGE');
    expect(await held()).toBe('USE');
    await writer.remove('admin', team, ref, 'USE');
    await start('team-*=team-*:MANAGE');
    expect(await held()).toBeUndefined();
    // Lowered: USE is given once, and an administrator's removal of it stays.
    await start('team-*=team-*');
    expect(await held()).toBe('USE');
    await writer.remove('admin', team, ref, 'USE');
    const writes = await ruleWrites();
    await start('team-*=team-*');
    expect(await held()).toBeUndefined();
    expect(await ruleWrites()).toBe(writes);
  });

  it('a role found held at the level the rule names is recorded without a write', async () => {
    await writer.create('admin', team, ref, 'MANAGE');
    await start('team-*=team-*:MANAGE');
    expect(await ruleWrites()).toBe(0);
    expect(await sql.all('SELECT workspace, permission FROM workspace_rule_grants')).toEqual([{ workspace: 'team-a', permission: 'MANAGE' }]);
  });
});
