import { z } from 'zod';
import type { Grantee } from '../authz/grants-repo.js';
import { badRequest, conflict, forbidden, notFound } from '../errors.js';
import type { Group } from '../principals/types.js';
import { inWorkspace } from '../workspaces/request-workspace.js';
import { heldGrantById, heldGrantsOf, type HeldGrant } from './held-grants.js';
import { requireUser } from './lookups.js';
import { grantTarget, levelOn, mlflowIdSchema, mlflowLevelSchema, ROLE_WORKSPACE, roleWorkspace, type GrantTarget } from './mlflow-params.js';
import { assignmentJson, requireRole, roleJson, rolePermissionJson } from './role-json.js';
import type { AdminDeps, AdminRequest, AdminRoute } from './types.js';
import { readQuery } from './ui-query.js';
import { groupNameSchema, usernameSchema } from './validation.js';

/**
 * MLflow basic-auth's role routes (MLflow 3.13+, `AuthServiceClient`'s roles), under `/api/3.0` as
 * MLflow serves them. A role is a flowgate group: creating a role creates a group, a role permission
 * is a grant (or, for `*`, a pattern grant) of the group, assigning a role adds a member. Groups made
 * any other way (the admin API, an identity provider's roles) are roles too. Administrators only,
 * apart from a user reading their own roles.
 *
 * Every role lives in `ROLE_WORKSPACE` (`default`), and a role permission applies in its role's
 * workspace, as MLflow's does: the routes read and write role permissions there whatever workspace the
 * request names with `X-MLFLOW-WORKSPACE`. A group's grants kept in another workspace are no role
 * permission of it: not listed, and their `role_permission_id` names none.
 */

const createBody = z.strictObject({
  workspace: z.string({ message: 'must be a string' }),
  name: groupNameSchema,
  description: z.string({ message: 'must be a string' }).nullable().optional(),
});
const updateBody = z.strictObject({
  role_id: mlflowIdSchema,
  name: groupNameSchema.optional(),
  description: z.string({ message: 'must be a string' }).optional(),
});
const roleIdBody = z.strictObject({ role_id: mlflowIdSchema });
const roleIdQuery = z.object({ role_id: mlflowIdSchema });
/** `roles/list`'s workspaces, repeated or none (read with `getAll`: only `default` is served). */
const rolesListQuery = z.object({ workspace: z.array(z.string()).optional() });
const addPermissionBody = z.strictObject({
  role_id: mlflowIdSchema,
  resource_type: z.string({ message: 'must be a string' }),
  resource_pattern: z.string({ message: 'must be a string' }).min(1, 'must not be empty'),
  permission: mlflowLevelSchema,
});
const permissionIdBody = z.strictObject({ role_permission_id: mlflowIdSchema });
const updatePermissionBody = z.strictObject({ role_permission_id: mlflowIdSchema, permission: mlflowLevelSchema });
const assignBody = z.strictObject({ username: usernameSchema, role_id: mlflowIdSchema });
const usernameQuery = z.object({ username: z.string({ message: 'is required' }) });

const role = (group: Group) => ({ grantee: { type: 'group', id: group.id } as Grantee, name: group.name });

/** A grant made from MLflow's role permission (or a user's grant): refused when the grantee already holds one there, as MLflow refuses a second row. */
export async function writeTarget(deps: AdminDeps, actor: string, who: { grantee: Grantee; name: string }, t: GrantTarget): Promise<void> {
  if (t.shape === 'pattern') {
    if ((await deps.patternGrants.get(who.grantee, t.kind, t.pattern)) !== undefined)
      throw conflict(`${who.name} already has a permission on every ${t.kind} ('${t.pattern}')`);
    await deps.patternWriter.set(actor, who, t.kind, t.pattern, t.permission);
    return;
  }
  if ((await deps.grants.get(who.grantee, t.kind, t.id)) !== undefined) throw conflict(`${who.name} already has a permission on ${t.kind} '${t.id}'`);
  await deps.grantWriter.create(actor, who, { kind: t.kind, id: t.id } as Parameters<AdminDeps['grantWriter']['create']>[2], t.permission);
}

/**
 * Removes one held grant (by its writer, so the policy index and audit log follow), in the workspace it
 * is kept in and by its id there. False, with nothing written, when the grantee no longer holds it
 * there: the caller answers as for a grant nobody holds, never with a success that changed nothing.
 */
export async function removeHeld(deps: AdminDeps, actor: string, who: { grantee: Grantee; name: string }, h: HeldGrant): Promise<boolean> {
  return inWorkspace(h.workspace, async () => {
    if (h.pattern) return (await deps.patternWriter.remove(actor, who, h.kind, h.name)) !== undefined;
    const old = await deps.grants.get(who.grantee, h.kind, h.name);
    if (old === undefined) return false;
    await deps.grantWriter.remove(actor, who, { kind: h.kind, id: h.name } as Parameters<AdminDeps['grantWriter']['remove']>[2], old);
    return true;
  });
}

/** Changes the level of one held grant, in the workspace it is kept in; false, with nothing written, when the grantee no longer holds it. */
async function updateHeld(deps: AdminDeps, actor: string, who: { grantee: Grantee; name: string }, h: HeldGrant, permission: HeldGrant['permission']): Promise<boolean> {
  return inWorkspace(h.workspace, async () => {
    if (h.pattern) {
      // `set` would make a pattern grant that is gone: asked first.
      if ((await deps.patternGrants.get(who.grantee, h.kind, h.name)) === undefined) return false;
      await deps.patternWriter.set(actor, who, h.kind, h.name, permission);
      return true;
    }
    const old = await deps.grants.get(who.grantee, h.kind, h.name);
    if (old === undefined) return false;
    await deps.grantWriter.update(actor, who, { kind: h.kind, id: h.name } as Parameters<AdminDeps['grantWriter']['update']>[2], old, permission);
    return true;
  });
}

const missingRolePermission = (id: number) => notFound(`Role permission with id=${id} not found`);

/**
 * The role permission the id names; 404 for an id that is no group's grant (a user's own grants are
 * not role permissions), nor one kept in the roles' workspace (a group's grant made in another
 * workspace through the admin API is no role permission).
 */
async function requireRolePermission(deps: AdminDeps, id: number): Promise<{ held: HeldGrant; group: Group }> {
  const held = await heldGrantById(deps.sql, id);
  if (!held || held.grantee.type !== 'group' || held.workspace !== ROLE_WORKSPACE) throw missingRolePermission(id);
  return { held, group: await requireRole(deps, held.grantee.id) };
}

/** The held grant just written for a target in `workspace`: its number is the role permission's id. */
export async function heldFor(deps: AdminDeps, grantee: Grantee, t: GrantTarget, workspace: string): Promise<HeldGrant | undefined> {
  const name = t.shape === 'pattern' ? t.pattern : t.id;
  return (await heldGrantsOf(deps.sql, grantee, workspace)).find((h) => h.kind === t.kind && h.pattern === (t.shape === 'pattern') && h.name === name);
}

const body = <T>(req: AdminRequest) => req.body as T;

export const ROLE_ROUTES: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/mlflow/roles/create',
    api: '3.0',
    summary: 'Create a role (MLflow basic-auth): a group',
    access: 'admin',
    body: createBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof createBody>>(req);
      roleWorkspace(b.workspace);
      if (await deps.directory.groupByName(b.name)) throw conflict(`Role (name=${b.name}, workspace=${b.workspace}) already exists`);
      const group = await deps.principalWriter.createGroup(req.principal.username, b.name);
      return { status: 200, body: { role: await roleJson(deps, group) } };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/roles/get',
    api: '3.0',
    summary: 'Get a role with its permissions (MLflow basic-auth)',
    access: 'admin',
    query: roleIdQuery,
    handler: async (req, deps) => {
      const { role_id } = readQuery(roleIdQuery, req.query);
      return { status: 200, body: { role: await roleJson(deps, await requireRole(deps, role_id)) } };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/roles/list',
    api: '3.0',
    summary: "List roles, in the workspace(s) asked for (MLflow basic-auth); only 'default' is served",
    access: 'admin',
    query: rolesListQuery,
    handler: async (req, deps) => {
      for (const w of req.query.getAll('workspace')) roleWorkspace(w);
      const groups = await deps.directory.listGroups();
      const roles = [];
      for (const g of groups) roles.push(await roleJson(deps, g));
      return { status: 200, body: { roles } };
    },
  },
  {
    method: 'PATCH',
    path: '/mlflow/roles/update',
    api: '3.0',
    summary: "Update a role's description (not kept) or name (refused: a group is not renamed here)",
    access: 'admin',
    body: updateBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof updateBody>>(req);
      if (b.name === undefined && b.description === undefined)
        throw badRequest("At least one of 'name' or 'description' must be provided to update a role.");
      const group = await requireRole(deps, b.role_id);
      if (b.name !== undefined && b.name !== group.name)
        throw badRequest(
          `Role '${group.name}' cannot be renamed: a flowgate role is a group, and a group's name is how identity-provider roles reach it. Create a role under the new name instead`,
        );
      return { status: 200, body: { role: await roleJson(deps, group) } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/roles/delete',
    api: '3.0',
    summary: 'Delete a role: the group, its grants and memberships',
    access: 'admin',
    body: roleIdBody,
    handler: async (req, deps) => {
      const group = await requireRole(deps, body<z.infer<typeof roleIdBody>>(req).role_id);
      await deps.principalWriter.deleteGroup(req.principal.username, group);
      await deps.policyChanged();
      return { status: 200, body: {} };
    },
  },
  {
    method: 'POST',
    path: '/mlflow/roles/permissions/add',
    api: '3.0',
    summary: "Grant a role a permission on one resource, or on every one of a type ('*': a pattern grant)",
    access: 'admin',
    body: addPermissionBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof addPermissionBody>>(req);
      const t = grantTarget(b.resource_type, b.resource_pattern, b.permission, ROLE_WORKSPACE);
      const group = await requireRole(deps, b.role_id);
      await inWorkspace(ROLE_WORKSPACE, () => writeTarget(deps, req.principal.username, role(group), t));
      const held = await heldFor(deps, { type: 'group', id: group.id }, t, ROLE_WORKSPACE);
      if (!held) throw notFound(`The permission on ${t.kind} '${t.shape === 'pattern' ? t.pattern : t.id}' was not kept`);
      return { status: 200, body: { role_permission: rolePermissionJson(group.id, held) } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/roles/permissions/remove',
    api: '3.0',
    summary: "Remove one of a role's permissions",
    access: 'admin',
    body: permissionIdBody,
    handler: async (req, deps) => {
      const id = body<z.infer<typeof permissionIdBody>>(req).role_permission_id;
      const { held, group } = await requireRolePermission(deps, id);
      if (!(await removeHeld(deps, req.principal.username, role(group), held))) throw missingRolePermission(id);
      return { status: 200, body: {} };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/roles/permissions/list',
    api: '3.0',
    summary: "List a role's permissions",
    access: 'admin',
    query: roleIdQuery,
    handler: async (req, deps) => {
      const group = await requireRole(deps, readQuery(roleIdQuery, req.query).role_id);
      const held = await heldGrantsOf(deps.sql, { type: 'group', id: group.id }, ROLE_WORKSPACE);
      return { status: 200, body: { role_permissions: held.map((h) => rolePermissionJson(group.id, h)) } };
    },
  },
  {
    method: 'PATCH',
    path: '/mlflow/roles/permissions/update',
    api: '3.0',
    summary: "Change the level of one of a role's permissions",
    access: 'admin',
    body: updatePermissionBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof updatePermissionBody>>(req);
      const { held, group } = await requireRolePermission(deps, b.role_permission_id);
      // The same check as adding it, so a level the kind does not take is refused alike.
      const permission = levelOn(held.kind, b.permission);
      if (!(await updateHeld(deps, req.principal.username, role(group), held, permission))) throw missingRolePermission(b.role_permission_id);
      return { status: 200, body: { role_permission: rolePermissionJson(group.id, { ...held, permission }) } };
    },
  },
  {
    method: 'POST',
    path: '/mlflow/roles/assign',
    api: '3.0',
    summary: 'Assign a role to a user: make them a member of the group',
    access: 'admin',
    body: assignBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof assignBody>>(req);
      const user = await requireUser(deps, b.username);
      const group = await requireRole(deps, b.role_id);
      if (user.isServiceAccount)
        throw badRequest(`'${user.username}' is a service account; service accounts cannot be assigned roles (groups), grant them permissions directly`);
      if (!(await deps.principalWriter.addMember(req.principal.username, group, user)))
        throw conflict(`User '${user.username}' already has role id=${group.id}`);
      await deps.policyChanged();
      return { status: 200, body: { assignment: assignmentJson(group, user) } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/roles/unassign',
    api: '3.0',
    summary: 'Unassign a role from a user: remove them from the group',
    access: 'admin',
    body: assignBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof assignBody>>(req);
      const user = await requireUser(deps, b.username);
      const group = await requireRole(deps, b.role_id);
      if (!(await deps.principalWriter.removeMember(req.principal.username, group, user)))
        throw notFound(`User '${user.username}' does not have role id=${group.id}`);
      await deps.policyChanged();
      return { status: 200, body: {} };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/roles/users/list',
    api: '3.0',
    summary: "List a role's assignments (the group's members)",
    access: 'admin',
    query: roleIdQuery,
    handler: async (req, deps) => {
      const group = await requireRole(deps, readQuery(roleIdQuery, req.query).role_id);
      const members = await deps.directory.membersOfGroup(group.id);
      return { status: 200, body: { assignments: members.map((u) => assignmentJson(group, u)) } };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/users/roles/list',
    api: '3.0',
    summary: "List a user's roles (their groups): yourself, or as an administrator anyone's",
    access: 'authenticated',
    query: usernameQuery,
    handler: async (req, deps) => {
      const { username } = readQuery(usernameQuery, req.query);
      if (!req.principal.isAdmin && username !== req.principal.username) throw forbidden(`Permission denied: ${req.principal.username} may not list another user's roles`, 'not-self');
      const user = await requireUser(deps, username);
      const roles = [];
      for (const g of await deps.directory.groupsOfUser(user.id)) roles.push(await roleJson(deps, g));
      return { status: 200, body: { roles } };
    },
  },
];
