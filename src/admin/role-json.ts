import type { Group, User } from '../principals/types.js';
import { notFound } from '../errors.js';
import { splitQualified } from '../workspaces/names.js';
import { everyHeldGrantOf, heldGrantsOf, type HeldGrant } from './held-grants.js';
import { mlflowPatternOf, ROLE_WORKSPACE, toMlflowLevel } from './mlflow-params.js';
import type { AdminDeps } from './types.js';

/**
 * MLflow basic-auth's roles as flowgate keeps them: a role is a group (same id, same name), a role
 * permission is one of the group's grants or pattern grants, an assignment is a membership. The
 * JSON is MLflow's (`mlflow.server.auth.entities`), so `AuthServiceClient` reads it unchanged.
 */

export interface RolePermissionJson {
  readonly id: number;
  readonly role_id: number;
  readonly resource_type: string;
  readonly resource_pattern: string;
  readonly permission: string;
}

/** What MLflow shows as a grant's `resource_pattern`: the id as MLflow spells it, the pattern as it is, `*` for a workspace's own membership. */
export function shownPattern(h: HeldGrant): string {
  if (h.pattern) return h.target;
  if ((h.kind as string) === 'workspace') return '*';
  return mlflowPatternOf(h.kind, splitQualified(h.target).id);
}

export const rolePermissionJson = (roleId: number, h: HeldGrant): RolePermissionJson => ({
  id: h.id,
  role_id: roleId,
  resource_type: h.kind,
  resource_pattern: shownPattern(h),
  permission: toMlflowLevel(h.permission),
});

export async function roleJson(deps: AdminDeps, group: Group) {
  const held = await heldGrantsOf(deps.sql, { type: 'group', id: group.id });
  // flowgate keeps no description: a role's is always null (one sent is accepted and not kept).
  return { id: group.id, name: group.name, workspace: ROLE_WORKSPACE, description: null, permissions: held.map((h) => rolePermissionJson(group.id, h)) };
}

export async function requireRole(deps: AdminDeps, roleId: number): Promise<Group> {
  const group = (await deps.directory.listGroups()).find((g) => g.id === roleId);
  if (!group) throw notFound(`Role with id=${roleId} not found`);
  return group;
}

/**
 * An assignment's `id`: memberships have none of their own, so the pair (role, user) is numbered
 * (Cantor's pairing: distinct pairs, distinct numbers). Nothing in MLflow's API takes it back.
 */
export const assignmentJson = (group: Group, user: Pick<User, 'id'>) => {
  const [a, b] = [group.id, user.id];
  return { id: ((a + b) * (a + b + 1)) / 2 + b, user_id: user.id, role_id: group.id };
};

/** One row of MLflow's `users/permissions/list`: a grant with the role it comes through. */
export interface UserPermissionRow {
  readonly role_id: number;
  readonly role_name: string;
  readonly workspace: string;
  readonly resource_type: string;
  readonly resource_pattern: string;
  readonly permission: string;
}

/**
 * Every grant a user holds: their own (under MLflow's name for a user's own role, `__user_<id>__`,
 * with `role_id` 0: flowgate keeps them on the user, in no role) and each of their groups', in every
 * workspace (each row names its own).
 */
export async function userPermissionRows(deps: AdminDeps, user: User): Promise<UserPermissionRow[]> {
  const row = (roleId: number, roleName: string) => (h: HeldGrant): UserPermissionRow => ({
    role_id: roleId,
    role_name: roleName,
    workspace: h.workspace,
    resource_type: h.kind,
    resource_pattern: shownPattern(h),
    permission: toMlflowLevel(h.permission),
  });
  const rows = (await everyHeldGrantOf(deps.sql, { type: 'user', id: user.id })).map(row(0, `__user_${user.id}__`));
  for (const group of await deps.directory.groupsOfUser(user.id))
    rows.push(...(await everyHeldGrantOf(deps.sql, { type: 'group', id: group.id })).map(row(group.id, group.name)));
  return rows;
}
