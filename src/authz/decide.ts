import { permits, strongest } from '../resources/permissions.js';
import type { DecisionReason, GrantReason } from '../resources/reasons.js';
import type { Need, Permission } from './types.js';

/** The grants that bear on one (caller, resource) pair; gathered by the policy reader. */
export interface GrantFacts {
  readonly direct: Permission | undefined;
  readonly groups: readonly Permission[];
  /** The grants are pattern grants (the resource itself has none for the caller): see `withPatterns`. */
  readonly fromPattern?: boolean;
}

export interface Decision {
  readonly allow: boolean;
  readonly reason: DecisionReason;
  readonly permission?: Permission;
}

/**
 * The user's direct grant wins (NO_PERMISSIONS included); else NO_PERMISSIONS in any group denies;
 * else the strongest group grant; else the default. Pattern grants follow the same rule, under their
 * own reasons.
 */
export function effectivePermission(
  facts: GrantFacts,
  defaultPermission: Permission,
): { permission: Permission; reason: GrantReason } {
  const pattern = facts.fromPattern === true;
  if (facts.direct !== undefined) return { permission: facts.direct, reason: pattern ? 'pattern-grant' : 'direct-grant' };
  if (facts.groups.length > 0) {
    if (facts.groups.includes('NO_PERMISSIONS')) return { permission: 'NO_PERMISSIONS', reason: pattern ? 'group-pattern-deny' : 'group-deny' };
    return { permission: strongest(facts.groups), reason: pattern ? 'group-pattern-grant' : 'group-grant' };
  }
  return { permission: defaultPermission, reason: 'default-permission' };
}

const NO_FACTS: GrantFacts = { direct: undefined, groups: [] };

/**
 * The facts that count for a caller outside the request's workspace (not a member): the grants on the
 * resource itself. A pattern grant made in the workspace is a grant on its contents as a whole, and goes
 * with the membership, as the default permission does.
 */
export const outsiderFacts = (facts: GrantFacts, outsider: boolean): GrantFacts => (outsider && facts.fromPattern === true ? NO_FACTS : facts);

export interface DecisionInput {
  readonly isAdmin: boolean;
  readonly need: Need;
  /** One entry per resource the request touches; every one must permit. */
  readonly facts: readonly GrantFacts[];
  readonly defaultPermission: Permission;
  readonly createRequiresAdmin: boolean;
  /**
   * The caller's standing in the request's MLflow workspace, when MLflow runs with workspaces: a member
   * (USE or MANAGE on it) gets the default permission there and may create; its administrator (MANAGE)
   * manages everything in it; anyone else gets nothing but what is granted to them on the resource.
   */
  readonly workspace?: { readonly member: boolean; readonly manage: boolean };
}

/** Pure: no I/O, no request objects. Anything not explicitly allowed is denied. */
export function decide(input: DecisionInput): Decision {
  const { need } = input;
  if (need === 'public') return { allow: true, reason: 'public-route' };
  if (input.isAdmin) return { allow: true, reason: 'admin' };
  switch (need) {
    case 'authenticated':
      return { allow: true, reason: 'authenticated-route' };
    case 'admin':
      return { allow: false, reason: 'admin-only-route' };
    case 'create':
      if (input.createRequiresAdmin) return { allow: false, reason: 'create-admin-only' };
      if (input.workspace !== undefined && !input.workspace.member) return { allow: false, reason: 'workspace-non-member' };
      return { allow: true, reason: 'create-open' };
    case 'read':
    case 'use':
    case 'edit':
    case 'manage': {
      if (input.facts.length === 0) return { allow: false, reason: 'default-permission' };
      const ws = input.workspace;
      if (ws?.manage) return { allow: true, reason: 'workspace-manage', permission: 'MANAGE' };
      const outsider = ws !== undefined && !ws.member;
      let last: Decision = { allow: false, reason: 'default-permission' };
      for (const f of input.facts) {
        const eff = effectivePermission(outsiderFacts(f, outsider), outsider ? 'NO_PERMISSIONS' : input.defaultPermission);
        const reason = outsider && eff.reason === 'default-permission' ? 'workspace-non-member' : eff.reason;
        last = { allow: permits(eff.permission, need), reason, permission: eff.permission };
        if (!last.allow) return last;
      }
      return last;
    }
  }
}
