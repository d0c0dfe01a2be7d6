import { z } from 'zod';
import { conflict, notFound } from '../errors.js';
import { WORKSPACE } from '../resources/kinds.js';
import type { Permission } from '../resources/permissions.js';
import { existingGrantee, GRANTEES, knownGrantee, newGrantee, type GranteeShape } from './grantees.js';
import type { AdminDeps, AdminRequest, AdminRoute } from './types.js';
import { kindPermissionSchema, parseWith, usernameSchema, groupNameSchema } from './validation.js';

/**
 * A workspace's members as mlflow-oidc-auth serves them (`/api/3.0/mlflow/permissions/workspaces/<ws>/users|groups`):
 * the same grants as `permissions/<users|groups>/<name>/workspaces/<ws>`, seen from the workspace. Its
 * administrators (MANAGE on it) and flowgate's administrators read and change them.
 */
const BASE = '/mlflow/permissions/workspaces/:workspace';
const permission = kindPermissionSchema(WORKSPACE);
const workspaceOf = (req: AdminRequest) => parseWith(z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be an MLflow workspace name'), req.params.workspace, 'workspace in the path');

function memberJson(g: GranteeShape, workspace: string, name: string, level: Permission) {
  return { workspace, [g.nameField]: name, permission: level };
}

function routesFor(g: GranteeShape): AdminRoute[] {
  const nameSchema = g.type === 'user' ? usernameSchema : groupNameSchema;
  const createBody = z.strictObject({ [g.nameField]: nameSchema, permission });
  const onOne = { path: `${BASE}/${g.segment}/:${g.param}`, api: '3.0', access: 'manage', resource: { kind: WORKSPACE, param: 'workspace' } } as const;

  async function existing(req: AdminRequest, deps: AdminDeps) {
    const workspace = workspaceOf(req);
    const name = req.params[g.param]!;
    const ge = req.principal.isAdmin ? await existingGrantee(deps, g, name) : await knownGrantee(deps, g, name);
    const level = ge ? await deps.grants.get(ge, WORKSPACE, workspace) : undefined;
    if (!ge || level === undefined) throw notFound(`${g.type} '${name}' holds no role in workspace '${workspace}'`);
    return { workspace, name, ge, level };
  }

  return [
    {
      method: 'GET',
      path: `${BASE}/${g.segment}`,
      api: '3.0',
      summary: `List the ${g.segment} holding a role in a workspace`,
      access: 'manage',
      resource: { kind: WORKSPACE, param: 'workspace' },
      handler: async (req, deps) => {
        const workspace = workspaceOf(req);
        const side = (await deps.grants.onResource(WORKSPACE, workspace))[g.segment as 'users' | 'groups'];
        return { status: 200, body: { [g.segment]: side.map((r) => memberJson(g, workspace, r.name, r.permission)) } };
      },
    },
    {
      method: 'POST',
      path: `${BASE}/${g.segment}`,
      api: '3.0',
      summary: `Give a ${g.type} a role (USE or MANAGE) in a workspace`,
      access: 'manage',
      resource: { kind: WORKSPACE, param: 'workspace' },
      body: createBody,
      successStatus: 201,
      handler: async (req, deps) => {
        const workspace = workspaceOf(req);
        const body = req.body as Record<string, string> & { permission: Permission };
        const name = body[g.nameField]!;
        const { grantee } = await newGrantee(deps, g, req.principal, name);
        if ((await deps.grants.get(grantee, WORKSPACE, workspace)) !== undefined)
          throw conflict(`${g.type} '${name}' already holds a role in workspace '${workspace}'; use PATCH to change it`);
        await deps.grantWriter.create(req.principal.username, { grantee, name }, { kind: WORKSPACE, id: workspace }, body.permission);
        return { status: 201, body: memberJson(g, workspace, name, body.permission) };
      },
    },
    {
      method: 'PATCH',
      ...onOne,
      summary: `Change a ${g.type}'s role in a workspace`,
      body: z.strictObject({ permission }),
      handler: async (req, deps) => {
        const { workspace, name, ge, level } = await existing(req, deps);
        const next = (req.body as { permission: Permission }).permission;
        await deps.grantWriter.update(req.principal.username, { grantee: ge, name }, { kind: WORKSPACE, id: workspace }, level, next);
        return { status: 200, body: memberJson(g, workspace, name, next) };
      },
    },
    {
      method: 'DELETE',
      ...onOne,
      summary: `Remove a ${g.type}'s role in a workspace`,
      handler: async (req, deps) => {
        const { workspace, name, ge, level } = await existing(req, deps);
        await deps.grantWriter.remove(req.principal.username, { grantee: ge, name }, { kind: WORKSPACE, id: workspace }, level);
        return { status: 200, body: {} };
      },
    },
  ];
}

export const WORKSPACE_MEMBER_ROUTES: readonly AdminRoute[] = GRANTEES.flatMap(routesFor);
