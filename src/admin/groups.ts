import { z } from 'zod';
import { badRequest, conflict, notFound } from '../errors.js';
import { userJson } from '../principals/types.js';
import { groupNamesOf, requireGroup, requireUser } from './lookups.js';
import type { GroupMembersAnswer } from './api-types.js';
import type { AdminRoute } from './types.js';
import { groupNameSchema, usernameSchema } from './validation.js';

const createGroupBody = z.strictObject({ group_name: groupNameSchema });
const memberBody = z.strictObject({ username: usernameSchema });

export const GROUP_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/groups',
    summary: 'List groups',
    access: 'admin',
    handler: async (_req, deps) => ({
      status: 200,
      body: { groups: (await deps.directory.listGroups()).map((g) => ({ name: g.name, created_at: new Date(g.createdAt).toISOString() })) },
    }),
  },
  {
    method: 'POST',
    path: '/mlflow/permissions/groups',
    summary: 'Create a group (groups are also created from identity-provider roles at login)',
    access: 'admin',
    body: createGroupBody,
    successStatus: 201,
    handler: async (req, deps) => {
      const { group_name } = req.body as z.infer<typeof createGroupBody>;
      if (await deps.directory.groupByName(group_name)) throw conflict(`Group '${group_name}' already exists`);
      const group = await deps.principalWriter.createGroup(req.principal.username, group_name);
      return { status: 201, body: { group: { name: group.name, created_at: new Date(group.createdAt).toISOString() } } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/permissions/groups/:group_name',
    summary: 'Delete a group with its memberships and grants',
    access: 'admin',
    handler: async (req, deps) => {
      const group = await requireGroup(deps, req.params.group_name!);
      await deps.principalWriter.deleteGroup(req.principal.username, group);
      await deps.policyChanged();
      return { status: 200, body: {} };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/permissions/groups/:group_name/users',
    summary: 'List the members of a group',
    access: 'admin',
    handler: async (req, deps) => {
      const group = await requireGroup(deps, req.params.group_name!);
      return { status: 200, body: { users: (await deps.directory.membersOfGroup(group.id)).map(userJson) } satisfies GroupMembersAnswer };
    },
  },
  {
    method: 'POST',
    path: '/mlflow/permissions/groups/:group_name/users',
    summary: 'Add a user to a group (service accounts cannot be members)',
    access: 'admin',
    body: memberBody,
    successStatus: 201,
    handler: async (req, deps) => {
      const group = await requireGroup(deps, req.params.group_name!);
      const user = await requireUser(deps, (req.body as z.infer<typeof memberBody>).username);
      if (user.isServiceAccount)
        throw badRequest(`'${user.username}' is a service account; service accounts cannot be added to groups, grant them permissions directly`);
      const added = await deps.principalWriter.addMember(req.principal.username, group, user);
      if (!added) throw conflict(`'${user.username}' is already a member of '${group.name}'`);
      await deps.policyChanged();
      return { status: 201, body: { group_name: group.name, username: user.username } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/permissions/groups/:group_name/users/:username',
    summary: 'Remove a user from a group',
    access: 'admin',
    handler: async (req, deps) => {
      const group = await requireGroup(deps, req.params.group_name!);
      const user = await requireUser(deps, req.params.username!);
      const removed = await deps.principalWriter.removeMember(req.principal.username, group, user);
      if (!removed) throw notFound(`'${user.username}' is not a member of '${group.name}'`);
      await deps.policyChanged();
      return { status: 200, body: {} };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/permissions/users/:username/groups',
    summary: "List a user's groups",
    access: 'self',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      return { status: 200, body: { groups: await groupNamesOf(deps, user) } };
    },
  },
];
