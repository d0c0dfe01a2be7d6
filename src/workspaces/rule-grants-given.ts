import type { Sql } from '../store/sql.js';

/**
 * The workspace role the group rules last gave each group, by group and workspace: a rule gives a
 * role once, so what an administrator later removes or changes stays as they left it, and a rule
 * whose level changes (raised, or lowered back) gives its new level once. A row goes with its group.
 */
export interface RuleGrantsGiven {
  /** The level the rules last gave `groupId` in `workspace`, or undefined if they never gave one. */
  levelOf(groupId: number, workspace: string): Promise<string | undefined>;
  /** `level` is what the rules gave `groupId` in `workspace` now, in place of any level before. */
  record(groupId: number, workspace: string, level: string): Promise<void>;
}

export function createRuleGrantsGiven(sql: Sql, now: () => number = Date.now): RuleGrantsGiven {
  return {
    levelOf: async (groupId, workspace) =>
      (await sql.get<{ permission: string }>('SELECT permission FROM workspace_rule_grants WHERE group_id = ? AND workspace = ?', [groupId, workspace]))?.permission,
    record: async (groupId, workspace, level) => {
      await sql.run(
        `INSERT INTO workspace_rule_grants (group_id, workspace, permission, given_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (group_id, workspace) DO UPDATE SET permission = excluded.permission, given_at = excluded.given_at`,
        [groupId, workspace, level, now()],
      );
    },
  };
}
