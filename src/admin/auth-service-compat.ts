import { z } from 'zod';
import type { Grantee } from '../authz/grants-repo.js';
import type { ResourceRef } from '../authz/types.js';
import { badRequest, FlowgateError, forbidden, notFound } from '../errors.js';
import type { Principal, User } from '../principals/types.js';
import { permits } from '../resources/permissions.js';
import { DEFAULT_WORKSPACE } from '../workspaces/names.js';
import { currentWorkspace } from '../workspaces/request-workspace.js';
import { knownGrantee } from './grantees.js';
import { requireUser } from './lookups.js';
import { grantTarget, mlflowLevelSchema, ROLE_WORKSPACE, toMlflowLevel, type GrantTarget } from './mlflow-params.js';
import { roleJson, userPermissionRows } from './role-json.js';
import { heldFor, removeHeld, writeTarget } from './roles.js';
import type { AdminDeps, AdminRequest, AdminRoute } from './types.js';
import { readQuery } from './ui-query.js';
import { USER_ROUTES } from './users.js';
import { usernameSchema } from './validation.js';

/**
 * The rest of MLflow basic-auth's API that `mlflow.server.auth.client.AuthServiceClient` calls, in
 * its shapes: users by username in the query or body, and one user's grants through the per-user
 * permission routes (`/api/3.0/mlflow/users/permissions/*`). Creating a user is the admin API's
 * `users/create` (users.ts), which answers MLflow's 200 when the body carries basic-auth's password.
 */

/** MLflow's user JSON (`entities.User.to_json`). */
const mlflowUser = (u: User) => ({ id: u.id, username: u.username, is_admin: u.isAdmin });

const usernameQuery = z.object({ username: z.string({ message: 'is required' }) });
const usernameBody = z.strictObject({ username: usernameSchema });
const adminBody = z.strictObject({ username: usernameSchema, is_admin: z.boolean({ message: 'must be a boolean' }) });
const passwordBody = z.strictObject({
  username: usernameSchema,
  password: z.string({ message: 'must be a string' }),
  current_password: z.string({ message: 'must be a string' }).optional(),
});
const resourceFields = { username: usernameSchema, resource_type: z.string({ message: 'must be a string' }), resource_id: z.string({ message: 'must be a string' }).min(1, 'must not be empty') };
const grantBody = z.strictObject({ ...resourceFields, permission: mlflowLevelSchema });
const revokeBody = z.strictObject(resourceFields);
const getQuery = z.object({ username: z.string({ message: 'is required' }), resource_type: z.string({ message: 'is required' }), resource_id: z.string({ message: 'is required' }).min(1, 'must not be empty') });

/** A user's own data: theirs, or any user's for an administrator. Decided before the user is looked up, so no one learns which names exist. */
function selfOrAdmin(principal: Principal, username: string, what: string): void {
  if (!principal.isAdmin && principal.username !== username) throw forbidden(`Permission denied: ${principal.username} may not ${what} of another user`, 'not-self');
}

/** An admin-API route of users.ts, called with MLflow's parameters moved into its path: one rule for both spellings. */
function usersRoute(method: AdminRoute['method'], path: string): AdminRoute['handler'] {
  const route = USER_ROUTES.find((r) => r.method === method && r.path === path);
  if (!route) throw new Error(`no admin route ${method} ${path}`);
  return route.handler;
}
const deleteUser = usersRoute('DELETE', '/mlflow/permissions/users/:username');
const updateUser = usersRoute('PATCH', '/mlflow/permissions/users/:username');

/**
 * `MLflow's per-user grant routes name MLflow's resource types; `workspace` is refused as MLflow
 * refuses it here (workspace membership is a role's).
 */
function userTarget(resourceType: string, resourceId: string, level: z.infer<typeof mlflowLevelSchema>, held = false): GrantTarget {
  if (resourceType === 'workspace')
    throw badRequest("resource_type 'workspace' is not supported by the per-user permission convenience APIs. Grant workspace membership through a role.");
  return grantTarget(resourceType, resourceId, level, ROLE_WORKSPACE, held);
}

/**
 * Who may grant or revoke a user's permission on a resource: an administrator, or (on one resource)
 * a holder of MANAGE on it, as MLflow's per-resource MANAGE delegation. Every resource of a kind
 * (`*`) is an administrator's.
 */
async function mayManage(deps: AdminDeps, principal: Principal, t: GrantTarget): Promise<void> {
  if (principal.isAdmin) return;
  if (t.shape === 'grant' && (t.kind as string) !== 'workspace' && (await deps.canManage(principal, { kind: t.kind, id: t.id } as ResourceRef))) return;
  throw forbidden(`Permission denied: ${principal.username} may not manage permissions on this ${t.kind}`, 'no-manage-grant');
}

const body = <T>(req: AdminRequest) => req.body as T;

export const AUTH_SERVICE_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/users/get',
    summary: 'Get a user (MLflow basic-auth): yourself, or as an administrator anyone',
    access: 'authenticated',
    query: usernameQuery,
    handler: async (req, deps) => {
      const { username } = readQuery(usernameQuery, req.query);
      selfOrAdmin(req.principal, username, 'read the account');
      return { status: 200, body: { user: mlflowUser(await requireUser(deps, username)) } };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/users/list',
    summary: 'List users with their roles (MLflow basic-auth)',
    access: 'admin',
    handler: async (_req, deps) => {
      const users = [];
      for (const u of await deps.directory.listUsers()) {
        const roles = [];
        for (const g of await deps.directory.groupsOfUser(u.id)) roles.push(await roleJson(deps, g));
        users.push({ ...mlflowUser(u), roles });
      }
      return { status: 200, body: { users } };
    },
  },
  {
    method: 'PATCH',
    path: '/mlflow/users/update-password',
    summary: 'Refused: flowgate keeps no passwords (MLflow basic-auth); clients authenticate with access tokens',
    access: 'authenticated',
    body: passwordBody,
    handler: (req) => {
      const { username } = body<z.infer<typeof passwordBody>>(req);
      selfOrAdmin(req.principal, username, 'change the password');
      // Nothing is stored: a password set here would authenticate nothing, and a script should learn that now.
      throw badRequest(
        `flowgate does not use passwords: clients authenticate with an access token in place of MLFLOW_TRACKING_PASSWORD. ` +
          `Mint one with PATCH /api/2.0/mlflow/users/access-token {"username": "${username}"} (the previous one stops working)`,
      );
    },
  },
  {
    method: 'PATCH',
    path: '/mlflow/users/update-admin',
    summary: "Change a user's admin flag (MLflow basic-auth)",
    access: 'admin',
    body: adminBody,
    handler: async (req, deps) => {
      const { username, is_admin } = body<z.infer<typeof adminBody>>(req);
      await updateUser({ ...req, params: { username }, body: { is_admin } }, deps);
      return { status: 200, body: {} };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/users/delete',
    summary: 'Delete a user with their tokens, memberships and grants (MLflow basic-auth)',
    access: 'admin',
    body: usernameBody,
    handler: async (req, deps) => {
      await deleteUser({ ...req, params: { username: body<z.infer<typeof usernameBody>>(req).username }, body: undefined }, deps);
      return { status: 200, body: {} };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/users/current/permissions',
    api: '3.0',
    summary: "Read the caller's own grants, directly and through their roles (groups), with their admin flag",
    access: 'authenticated',
    handler: async (req, deps) => {
      const me = await requireUser(deps, req.principal.username);
      return { status: 200, body: { is_admin: me.isAdmin, permissions: await userPermissionRows(deps, me) } };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/users/permissions/list',
    api: '3.0',
    summary: "Read a user's grants, directly and through their roles: yourself, or as an administrator anyone's",
    access: 'authenticated',
    query: usernameQuery,
    handler: async (req, deps) => {
      const { username } = readQuery(usernameQuery, req.query);
      selfOrAdmin(req.principal, username, 'list the permissions');
      const user = await requireUser(deps, username);
      return { status: 200, body: { is_admin: user.isAdmin, permissions: await userPermissionRows(deps, user) } };
    },
  },
  {
    method: 'POST',
    path: '/mlflow/users/permissions/grant',
    api: '3.0',
    summary: "Grant a user a permission on a resource (or on every one of a type, '*'): administrators, or a holder of MANAGE on the resource",
    access: 'authenticated',
    body: grantBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof grantBody>>(req);
      const t = userTarget(b.resource_type, b.resource_id, b.permission);
      await mayManage(deps, req.principal, t);
      const user = await requireUser(deps, b.username);
      await writeTarget(deps, req.principal.username, { grantee: { type: 'user', id: user.id }, name: user.username }, t);
      return { status: 200, body: {} };
    },
  },
  {
    method: 'POST',
    path: '/mlflow/users/permissions/revoke',
    api: '3.0',
    summary: "Revoke a user's permission on a resource: administrators, or a holder of MANAGE on the resource",
    access: 'authenticated',
    body: revokeBody,
    handler: async (req, deps) => {
      const b = body<z.infer<typeof revokeBody>>(req);
      // The level is not the question here: READ stands in, so the resource is read exactly as a grant's.
      const t = userTarget(b.resource_type, b.resource_id, 'READ', true);
      await mayManage(deps, req.principal, t);
      const missing = notFound(`Permission for user=${b.username} on resource_type=${b.resource_type}, resource_id=${b.resource_id} not found.`);
      // A manager learns nothing about a name holding no grant here, not even whether it exists.
      const grantee: Grantee | undefined = await knownGrantee(deps, { type: 'user', segment: 'users', param: 'username', nameField: 'username' }, b.username);
      if (!grantee) throw missing;
      // MLflow's per-user grants are the request's workspace's (its synthetic role there): the grant is
      // looked for, and removed, in the workspace MANAGE was checked in, and nowhere else.
      const held = await heldFor(deps, grantee, t, currentWorkspace() ?? DEFAULT_WORKSPACE);
      if (!held || !(await removeHeld(deps, req.principal.username, { grantee, name: b.username }, held))) throw missing;
      return { status: 200, body: {} };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/users/permissions/get',
    api: '3.0',
    summary: "Read a user's effective permission on one resource, as the gate decides it: yourself, or as an administrator anyone's",
    access: 'authenticated',
    query: getQuery,
    handler: async (req, deps) => {
      const q = readQuery(getQuery, req.query);
      const t = userTarget(q.resource_type, q.resource_id, 'READ', true);
      selfOrAdmin(req.principal, q.username, 'read the permissions');
      if (t.shape === 'pattern') throw badRequest("flowgate decides on one resource at a time: ask about a resource id, not '*'");
      const user = await requireUser(deps, q.username);
      if (user.isAdmin) return { status: 200, body: { allowed: true, permission: 'MANAGE' } };
      const who = { userId: user.id, groupIds: (await deps.directory.groupsOfUser(user.id)).map((g) => g.id) };
      let permission;
      try {
        permission = (await deps.effectiveOn(who, { kind: t.kind, id: t.id } as ResourceRef)).permission;
      } catch (error) {
        // An experiment MLflow does not have reads as one the user may not read (as the lists' look-up answers it).
        if (!(error instanceof FlowgateError && error.code === 'RESOURCE_DOES_NOT_EXIST')) throw error;
        permission = 'NO_PERMISSIONS' as const;
      }
      // As MLflow: `allowed` is USE or more (READ alone is not); a resource the caller may not read is NO_PERMISSIONS, without saying why.
      if (!req.principal.isAdmin && !permits(permission, 'read')) return { status: 200, body: { allowed: false, permission: 'NO_PERMISSIONS' } };
      return { status: 200, body: { allowed: permits(permission, 'use'), permission: permission === 'NO_PERMISSIONS' ? 'NO_PERMISSIONS' : toMlflowLevel(permission) } };
    },
  },
];
