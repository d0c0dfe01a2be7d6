import type { GrantWriter } from '../authz/grant-writer.js';
import type { GrantsRepo } from '../authz/grants-repo.js';
import type { Logger } from '../logging.js';
import type { Directory } from '../principals/directory.js';
import type { Group } from '../principals/types.js';
import { WORKSPACE } from '../resources/kinds.js';
import { StoreDuplicateError } from '../store/store-errors.js';
import { workspaceNameProblem } from './names.js';
import type { RuleGrantsGiven } from './rule-grants-given.js';

/**
 * A rule giving the members of identity-provider groups a role in a workspace, so a team needs no
 * per-user set-up: `team-*=team-*` makes group `team-a` a member (USE) of workspace `team-a`. The
 * group is matched whole or, ending in `*`, by its prefix; a `*` in the workspace takes what the
 * group's matched.
 */
export interface WorkspaceGroupRule {
  readonly group: string;
  readonly workspace: string;
  readonly level: 'USE' | 'MANAGE';
}

/** The rules of `FLOWGATE_WORKSPACE_GROUP_RULES` (`GROUP=WORKSPACE[:USE|MANAGE]`, comma-separated), or the problem with them. */
export function parseWorkspaceGroupRules(text: string): WorkspaceGroupRule[] | string {
  const rules: WorkspaceGroupRule[] = [];
  for (const raw of text.split(',').map((r) => r.trim()).filter((r) => r !== '')) {
    const m = /^([^=*]+\*?)=([a-z0-9*-]+)(?::(USE|MANAGE))?$/.exec(raw);
    if (!m) return `'${raw}' is not GROUP=WORKSPACE[:USE|MANAGE] (a group may end with '*', which a '*' in the workspace repeats)`;
    const [, group, workspace, level] = m as unknown as [string, string, string, 'USE' | 'MANAGE' | undefined];
    if (workspace.includes('*') && !group.endsWith('*')) return `'${raw}': the workspace repeats the group's '*', which it does not have`;
    if (!workspace.includes('*') && workspaceNameProblem(workspace) !== undefined) return `'${raw}': '${workspace}' is not an MLflow workspace name`;
    rules.push({ group, workspace, level: level ?? 'USE' });
  }
  return rules;
}

/** The role the first matching rule gives a group, or undefined (a derived name MLflow would refuse gives none). */
export function workspaceRoleOf(rules: readonly WorkspaceGroupRule[], group: string): { workspace: string; level: 'USE' | 'MANAGE' } | undefined {
  for (const rule of rules) {
    const prefix = rule.group.endsWith('*') ? rule.group.slice(0, -1) : undefined;
    if (prefix === undefined ? group !== rule.group : !group.startsWith(prefix)) continue;
    const workspace = prefix === undefined ? rule.workspace : rule.workspace.replaceAll('*', group.slice(prefix.length));
    if (workspaceNameProblem(workspace) === undefined) return { workspace, level: rule.level };
  }
  return undefined;
}

export const RULE_ACTOR = 'workspace-rule';

/**
 * Gives the grants the rules name: a group gets its workspace role when it is made (an identity
 * provider's group appears at its first member's sign-in) and, for groups made before, at start. The
 * grants are ordinary ones (shown, audited, removable), and each is given once: the level the rules
 * last gave a group in a workspace (or found it holding) is recorded, and what an administrator then
 * removes or changes is left so at the next start. A rule naming another level than the recorded one
 * (raised, or lowered back) gives that level once more, and records it in place of the old one.
 */
export function createWorkspaceGroupRules(deps: {
  readonly rules: readonly WorkspaceGroupRule[];
  readonly grants: GrantsRepo;
  readonly writer: GrantWriter;
  readonly directory: Pick<Directory, 'listGroups'>;
  readonly given: RuleGrantsGiven;
  readonly logger: Logger;
}) {
  async function apply(group: Group): Promise<void> {
    const role = workspaceRoleOf(deps.rules, group.name);
    if (role === undefined) return;
    if ((await deps.given.levelOf(group.id, role.workspace)) === role.level) return;
    const grantee = { type: 'group' as const, id: group.id };
    const ref = { kind: WORKSPACE, id: role.workspace };
    const who = { grantee, name: group.name };
    let held = await deps.grants.get(grantee, WORKSPACE, role.workspace);
    if (held === undefined) {
      try {
        await deps.writer.create(RULE_ACTOR, who, ref, role.level);
        held = role.level;
      } catch (e) {
        // Replicas starting together apply the same rules: another one gave it first. What it gave is held now.
        if (!(e instanceof StoreDuplicateError)) throw e;
        held = await deps.grants.get(grantee, WORKSPACE, role.workspace);
        if (held === undefined) throw e;
      }
    }
    if (held !== role.level) await deps.writer.update(RULE_ACTOR, who, ref, held, role.level);
    // After the grant: a start cut short in between gives it again, finds it held, and records it.
    await deps.given.record(group.id, role.workspace, role.level);
  }
  return {
    /** A group was just made. */
    groupCreated: (group: Group): Promise<void> =>
      deps.rules.length === 0
        ? Promise.resolve()
        : apply(group).catch((err: Error) => deps.logger.warn({ err: { message: err.message }, group: group.name }, 'workspace rule not applied to a new group')),
    /** Every group, at start. */
    async reconcile(): Promise<void> {
      if (deps.rules.length === 0) return;
      for (const group of await deps.directory.listGroups()) await apply(group);
    },
  };
}
