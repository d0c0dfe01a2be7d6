import type { z } from 'zod';
import type { Grantee } from '../authz/grants-repo.js';
import type { Permission, ResourceKind } from '../authz/types.js';
import { conflict, notFound } from '../errors.js';
import { adminIdOf, adminIdPath, keyedInWorkspace, KIND_SPECS, KINDS, withArticle } from '../resources/kinds.js';
import { currentWorkspace } from '../workspaces/request-workspace.js';
import { parseScorerId } from '../resources/scorer-identity.js';
import type { GrantIdField, GranteeNamed, KindGrant, KindGrantsAnswer } from './api-types.js';
import { existingGrantee, GRANTEES, knownGrantee, newGrantee, type GranteeShape } from './grantees.js';
import type { AdminDeps, AdminRequest, AdminRoute } from './types.js';
import { heldIdSchema, kindPermissionBody, parseWith, resourceIdSchema } from './validation.js';

interface KindShape {
  readonly kind: ResourceKind;
  readonly segment: string;
  readonly param: string;
  readonly label: string;
  /** The id of a resource a new grant may name: one MLflow can hold. */
  readonly idSchema: z.ZodType<string>;
  /** The id of a grant already kept (one made before MLflow's name rules were checked stays readable and removable). */
  readonly heldIdSchema: z.ZodType<string>;
  /** A grant's body: a permission the kind takes. */
  readonly body: z.ZodType<{ permission: Permission }>;
}

const KIND_SHAPES: readonly KindShape[] = KIND_SPECS.map((k) => ({
  kind: k.kind,
  segment: k.admin.segment,
  param: k.admin.param,
  label: k.ui.one,
  idSchema: resourceIdSchema(k.kind),
  heldIdSchema: heldIdSchema(k.kind),
  body: kindPermissionBody(k.kind),
}));

/** A grant's or pattern grant's grantee, under the JSON's field for its type. */
export const granteeNamed = (type: Grantee['type'], name: string): GranteeNamed => (type === 'user' ? { username: name } : { group_name: name });

/** The kinds whose grant JSON names their resource by the field `F` (their `admin.param` in the registry). */
type KindsNamedBy<F extends GrantIdField> = { [K in ResourceKind]: GrantIdField<K> extends F ? K : never }[ResourceKind];
type GrantJson<Kind extends ResourceKind> = (kind: Kind, id: string, grantee: GranteeNamed, permission: Permission) => KindGrant;

/**
 * The grant JSON by the field naming its resource, each checked against `KindGrant` for the kinds it
 * serves: kind, resource, grantee, permission, in the order the routes have always answered them. A
 * kind whose `admin.param` is a new field does not compile until that field has its line here.
 */
const GRANT_JSON: { readonly [F in GrantIdField]: GrantJson<KindsNamedBy<F>> } = {
  experiment_id: (resource_type, experiment_id, grantee, permission) => ({ resource_type, experiment_id, ...grantee, permission }),
  name: (resource_type, name, grantee, permission) => ({ resource_type, name, ...grantee, permission }),
  workspace: (resource_type, workspace, grantee, permission) => ({ resource_type, workspace, ...grantee, permission }),
  // mlflow-oidc-auth's scorer grant: the experiment and the name, each under its own field.
  scorer_name: (resource_type, id, grantee, permission) => {
    const { experimentId, name } = parseScorerId(id) ?? { experimentId: '', name: id };
    return { resource_type, experiment_id: experimentId, scorer_name: name, ...grantee, permission };
  },
};

/** A grant's JSON: the line of its kind's own field (the registry's `admin.param`, by which `KindsNamedBy` gives the line its kinds). */
function grantJson(k: KindShape, id: string, g: GranteeShape, name: string, permission: Permission): KindGrant {
  const json = GRANT_JSON[KINDS[k.kind].admin.param] as GrantJson<ResourceKind>;
  const grant = json(k.kind, id, granteeNamed(g.type, name), permission);
  // A grant kept in another workspace than the default one says so (a workspace's own membership is in none).
  const workspace = keyedInWorkspace(k.kind) ? currentWorkspace() : undefined;
  return workspace === undefined ? grant : { ...grant, workspace };
}

function resourceId(k: KindShape, req: AdminRequest, schema = k.heldIdSchema): string {
  return parseWith(schema, adminIdOf(k.kind, req.params), `${adminIdPath(k.kind).replaceAll(':', '')} in the path`);
}

function routesFor(k: KindShape, g: GranteeShape): AdminRoute[] {
  const base = `/mlflow/permissions/${g.segment}/:${g.param}/${k.segment}`;
  /** The routes on one grant: its path, and MANAGE on its resource to use them. */
  const oneGrant = { path: `${base}/${adminIdPath(k.kind)}`, access: 'manage', resource: { kind: k.kind, param: k.param } } as const;
  const who = (req: AdminRequest) => req.params[g.param]!;
  const answer = (status: number, id: string, name: string, permission: Permission) => ({
    status,
    body: { permission: grantJson(k, id, g, name, permission) },
  });

  /**
   * The grant the path names, with its grantee and permission; 404 when there is none (`hint` ends
   * the message). For a manager who is not an administrator, a grantee that does not exist holds no
   * permission here, like one that does: which names exist is not theirs to learn from a resource's grants.
   */
  async function existingGrant(req: AdminRequest, deps: AdminDeps, hint = '') {
    const id = resourceId(k, req);
    const name = who(req);
    const ge = req.principal.isAdmin ? await existingGrantee(deps, g, name) : await knownGrantee(deps, g, name);
    const permission = ge ? await deps.grants.get(ge, k.kind, id) : undefined;
    if (!ge || permission === undefined) throw notFound(`${g.type} '${name}' has no permission on ${k.label} '${id}'${hint}`);
    return { id, name, ge, permission };
  }

  return [
    {
      method: 'GET',
      path: base,
      summary: `List a ${g.type}'s permissions on ${k.label}s`,
      access: g.type === 'user' ? 'self' : 'admin',
      handler: async (req, deps) => {
        const name = who(req);
        const rows = await deps.grants.listOf(await existingGrantee(deps, g, name), k.kind);
        return { status: 200, body: { permissions: rows.map((r) => grantJson(k, r.resource_id, g, name, r.permission)) } satisfies KindGrantsAnswer };
      },
    },
    {
      method: 'POST',
      ...oneGrant,
      summary: `Grant a ${g.type} a permission on ${withArticle(k.label)}`,
      body: k.body,
      successStatus: 201,
      handler: async (req, deps) => {
        const id = resourceId(k, req, k.idSchema);
        const name = who(req);
        const { grantee: ge, createdGroup } = await newGrantee(deps, g, req.principal, name);
        const { permission } = req.body as z.infer<KindShape['body']>;
        if ((await deps.grants.get(ge, k.kind, id)) !== undefined)
          throw conflict(`${g.type} '${name}' already has a permission on ${k.label} '${id}'; use PATCH to change it`);
        await deps.grantWriter.create(req.principal.username, { grantee: ge, name }, { kind: k.kind, id }, permission);
        const made = answer(201, id, name, permission);
        // A group no one had named before was made for this grant (an administrator's: anyone else's needs the group to exist): said, since a misspelt name is otherwise silent.
        return createdGroup ? { ...made, body: { ...made.body, new_group: true } } : made;
      },
    },
    {
      method: 'GET',
      ...oneGrant,
      summary: `Get a ${g.type}'s permission on ${withArticle(k.label)}`,
      handler: async (req, deps) => {
        const { id, name, permission } = await existingGrant(req, deps);
        return answer(200, id, name, permission);
      },
    },
    {
      method: 'PATCH',
      ...oneGrant,
      summary: `Change a ${g.type}'s permission on ${withArticle(k.label)}`,
      body: k.body,
      handler: async (req, deps) => {
        const { id, name, ge, permission: old } = await existingGrant(req, deps, '; use POST to grant one');
        const { permission } = req.body as z.infer<KindShape['body']>;
        await deps.grantWriter.update(req.principal.username, { grantee: ge, name }, { kind: k.kind, id }, old, permission);
        return answer(200, id, name, permission);
      },
    },
    {
      method: 'DELETE',
      ...oneGrant,
      summary: `Remove a ${g.type}'s permission on ${withArticle(k.label)}`,
      handler: async (req, deps) => {
        const { id, name, ge, permission: old } = await existingGrant(req, deps);
        await deps.grantWriter.remove(req.principal.username, { grantee: ge, name }, { kind: k.kind, id }, old);
        return { status: 200, body: {} };
      },
    },
  ];
}

function resourceSideRoutes(k: KindShape): AdminRoute[] {
  return GRANTEES.map((g) => ({
    method: 'GET' as const,
    path: `/mlflow/permissions/${k.segment}/${adminIdPath(k.kind)}/${g.segment}`,
    summary: `List the ${g.segment} holding a permission on ${withArticle(k.label)}`,
    access: 'manage' as const,
    resource: { kind: k.kind, param: k.param },
    handler: async (req: AdminRequest, deps: AdminDeps) => {
      const id = resourceId(k, req);
      const side = (await deps.grants.onResource(k.kind, id))[g.segment as 'users' | 'groups'];
      return { status: 200, body: { [g.segment]: side.map((r) => grantJson(k, id, g, r.name, r.permission)) } };
    },
  }));
}

export const GRANT_ROUTES: readonly AdminRoute[] = KIND_SHAPES.flatMap((k) => [
  ...GRANTEES.flatMap((g) => routesFor(k, g)),
  ...resourceSideRoutes(k),
]);

