import type { GrantReason, WorkspaceReason } from '../resources/reasons.js';
import { WORKSPACE } from '../resources/kinds.js';
import type { WorkspaceStanding } from '../workspaces/standing.js';
import { effectivePermission, outsiderFacts } from './decide.js';
import type { Grantee, PolicyReader } from './policy.js';
import type { Permission, ResourceRef } from './types.js';

/** A caller's effective permission on one resource, why, and the grants on the resource itself behind it. */
export interface Effective {
  readonly permission: Permission;
  readonly reason: GrantReason | WorkspaceReason;
  /** The caller's own grant on the resource itself (pattern grants aside). */
  readonly direct: Permission | undefined;
  /** Each of the caller's groups' grant on the resource itself, in `who.groupIds` order. */
  readonly groups: ReadonlyArray<{ readonly groupId: number; readonly permission: Permission }>;
  /** The groups whose grant decided (a group grant or a group's NO_PERMISSIONS); empty for any other reason. */
  readonly decidingGroupIds: readonly number[];
}

/**
 * The one reading of a caller's effective permission on a resource, for explain and the Manage
 * screens: the gate's facts (the in-memory policy index, pattern grants composed in) under the gate's
 * rule (`effectivePermission`, which `decide()` applies), so what they show is what the gate decides —
 * and no store query, however many callers are asked about. An experiment's ref must carry its name
 * when `policy.needsName` says so. Administrators are the caller's to handle: the gate lets them
 * through before any grant counts.
 */
export function effectiveOn(policy: PolicyReader, who: Grantee, ref: ResourceRef, defaultPermission: Permission, workspaces?: Pick<WorkspaceStanding, 'current' | 'in'>): Effective {
  const own = policy.ownGrants(who, ref);
  // A workspace itself is decided on its membership alone, as the gate decides it: no default permission
  // and no standing in the request's workspace reach it (the default workspace's open membership aside).
  if (ref.kind === WORKSPACE) {
    const decided = effectivePermission(policy.factsFor(who, ref), workspaces?.in(who, ref.id).member ? 'USE' : 'NO_PERMISSIONS');
    const byGroup = decided.reason === 'group-grant' || decided.reason === 'group-deny';
    return { ...decided, direct: own.direct, groups: own.groups, decidingGroupIds: byGroup ? own.groups.filter((g) => g.permission === decided.permission).map((g) => g.groupId) : [] };
  }
  const standing = workspaces?.current(who);
  // In MLflow's workspaces, the caller's standing in the request's one comes first, as in decide().
  if (standing?.manage) return { permission: 'MANAGE', reason: 'workspace-manage', direct: own.direct, groups: own.groups, decidingGroupIds: [] };
  const outsider = standing !== undefined && !standing.member;
  const decided = effectivePermission(outsiderFacts(policy.factsFor(who, ref), outsider), outsider ? 'NO_PERMISSIONS' : defaultPermission);
  const { permission } = decided;
  const reason = outsider && decided.reason === 'default-permission' ? 'workspace-non-member' : decided.reason;
  const byGroup = reason === 'group-grant' || reason === 'group-deny';
  return {
    permission,
    reason,
    direct: own.direct,
    groups: own.groups,
    decidingGroupIds: byGroup ? own.groups.filter((g) => g.permission === permission).map((g) => g.groupId) : [],
  };
}
