import type { Sql } from '../store/sql.js';

/**
 * Which workspace roles the group rules have given, by group: a rule gives each role once, so what
 * an administrator later removes or changes stays as they left it. A row goes with its group.
 */
export interface RuleGrantsGiven {
  has(groupId: number, workspace: string, level: string): Promise<boolean>;
  record(groupId: number, workspace: string, level: string): Promise<void>;
}

export function createRuleGrantsGiven(sql: Sql, now: () => number = Date.now): RuleGrantsGiven {
  return {
    has: async (groupId, workspace, level) =>
      (await sql.get('SELECT 1 AS given FROM workspace_rule_grants WHERE group_id = ? AND workspace = ? AND permission = ?', [groupId, workspace, level])) !== undefined,
    record: async (groupId, workspace, level) => {
      await sql.run('INSERT INTO workspace_rule_grants (group_id, workspace, permission, given_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING', [
        groupId,
        workspace,
        level,
        now(),
      ]);
    },
  };
}
