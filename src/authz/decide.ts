import type { Need, Permission } from './types.js';

/** The grants that bear on one (caller, resource) pair; gathered by the policy reader. */
export interface GrantFacts {
  readonly direct: Permission | undefined;
  readonly groups: readonly Permission[];
  /** The grants are pattern grants (the resource itself has none for the caller): see `withPatterns`. */
  readonly fromPattern?: boolean;
}

export type Reason =
  | 'admin'
  | 'public-route'
  | 'authenticated-route'
  | 'admin-only-route'
  | 'create-open'
  | 'create-admin-only'
  | 'direct-grant'
  | 'group-grant'
  | 'group-deny'
  | 'pattern-grant'
  | 'group-pattern-grant'
  | 'group-pattern-deny'
  | 'default-permission';

export interface Decision {
  readonly allow: boolean;
  readonly reason: Reason;
  readonly permission?: Permission;
}

const RANK: Record<Permission, number> = { NO_PERMISSIONS: 0, READ: 1, EDIT: 2, MANAGE: 3 };
const NEEDED: Record<'read' | 'edit' | 'manage', number> = { read: 1, edit: 2, manage: 3 };

/**
 * The user's direct grant wins (NO_PERMISSIONS included); else NO_PERMISSIONS in any group denies;
 * else the strongest group grant; else the default. Pattern grants follow the same rule, under their
 * own reasons.
 */
export function effectivePermission(
  facts: GrantFacts,
  defaultPermission: Permission,
): { permission: Permission; reason: Reason } {
  const pattern = facts.fromPattern === true;
  if (facts.direct !== undefined) return { permission: facts.direct, reason: pattern ? 'pattern-grant' : 'direct-grant' };
  if (facts.groups.length > 0) {
    if (facts.groups.includes('NO_PERMISSIONS')) return { permission: 'NO_PERMISSIONS', reason: pattern ? 'group-pattern-deny' : 'group-deny' };
    let best: Permission = 'NO_PERMISSIONS';
    for (const p of facts.groups) if (RANK[p] > RANK[best]) best = p;
    return { permission: best, reason: pattern ? 'group-pattern-grant' : 'group-grant' };
  }
  return { permission: defaultPermission, reason: 'default-permission' };
}

export function permits(permission: Permission, need: 'read' | 'edit' | 'manage'): boolean {
  return RANK[permission] >= NEEDED[need];
}

export interface DecisionInput {
  readonly isAdmin: boolean;
  readonly need: Need;
  /** One entry per resource the request touches; every one must permit. */
  readonly facts: readonly GrantFacts[];
  readonly defaultPermission: Permission;
  readonly createRequiresAdmin: boolean;
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
      return input.createRequiresAdmin
        ? { allow: false, reason: 'create-admin-only' }
        : { allow: true, reason: 'create-open' };
    case 'read':
    case 'edit':
    case 'manage': {
      if (input.facts.length === 0) return { allow: false, reason: 'default-permission' };
      let last: Decision = { allow: false, reason: 'default-permission' };
      for (const f of input.facts) {
        const eff = effectivePermission(f, input.defaultPermission);
        last = { allow: permits(eff.permission, need), reason: eff.reason, permission: eff.permission };
        if (!last.allow) return last;
      }
      return last;
    }
  }
}
