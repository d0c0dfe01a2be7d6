import { z } from 'zod';
import type { Grantee } from '../authz/grants-repo.js';
import { patternProblem } from '../authz/pattern-match.js';
import type { Permission, ResourceKind } from '../authz/types.js';
import { badRequest, notFound } from '../errors.js';
import { permissionsOf, RESOURCE_KINDS } from '../resources/kinds.js';
import type { PatternGrant, PatternGrantsAnswer } from './api-types.js';
import { existingGrantee, granteeForGrant, GRANTEES, type GranteeShape } from './grantees.js';
import { granteeNamed } from './grants.js';
import type { AdminDeps, AdminRequest, AdminRoute } from './types.js';
import { kindPermissionMessage, parseWith, permissionSchema } from './validation.js';

const resourceTypeSchema = z.enum(RESOURCE_KINDS as [ResourceKind, ...ResourceKind[]], { message: `must be one of ${RESOURCE_KINDS.join(', ')}` });
/** Checked here rather than left to the repository, so the 400 names the field. */
const patternSchema = z.string({ message: 'must be a string' }).superRefine((pattern, ctx) => {
  const problem = patternProblem(pattern);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `is not a valid pattern: ${problem}` });
});

/** A pattern grant's permission must be one its kind takes (USE only on the gateway's kinds). */
const patternGrantBody = z.strictObject({ resource_type: resourceTypeSchema, pattern: patternSchema, permission: permissionSchema }).superRefine((g, ctx) => {
  if (!permissionsOf(g.resource_type).includes(g.permission)) ctx.addIssue({ code: 'custom', path: ['permission'], message: kindPermissionMessage(g.resource_type) });
});

/** A pattern grant's JSON: kind, pattern, grantee, permission, in the order the routes have always answered them. */
const patternJson = (kind: ResourceKind, pattern: string, grantee: Grantee['type'], name: string, permission: Permission): PatternGrant => ({
  resource_type: kind,
  pattern,
  ...granteeNamed(grantee, name),
  permission,
});

/** A listing's query: its optional `resource_type` filter (`kindFilter` reads it). */
const listQuery = z.object({ resource_type: resourceTypeSchema.optional() });
/** A removal's query: the pattern grant's kind and pattern, both required (the handler reads them). */
const removeQuery = z.object({ resource_type: resourceTypeSchema, pattern: z.string({ message: 'is required' }) });

/** The optional `resource_type` filter of a listing. */
function kindFilter(req: AdminRequest): ResourceKind | undefined {
  const value = req.query.get('resource_type');
  return value === null ? undefined : parseWith(resourceTypeSchema, value, "query parameter 'resource_type'");
}

function routesFor(g: GranteeShape): AdminRoute[] {
  const path = `/mlflow/permissions/${g.segment}/:${g.param}/patterns`;
  const who = (req: AdminRequest) => req.params[g.param]!;
  return [
    {
      method: 'GET',
      path,
      summary: `List a ${g.type}'s pattern grants`,
      access: 'admin',
      query: listQuery,
      handler: async (req, deps) => {
        const kind = kindFilter(req);
        const name = who(req);
        const rows = await deps.patternGrants.ofGrantee(await existingGrantee(deps, g, name));
        const shown = rows.filter((r) => kind === undefined || r.kind === kind);
        return { status: 200, body: { patterns: shown.map((r) => patternJson(r.kind, r.pattern, g.type, name, r.permission)) } satisfies PatternGrantsAnswer };
      },
    },
    {
      method: 'POST',
      path,
      summary: `Grant a ${g.type} a permission on every resource named to match a pattern, or change it`,
      access: 'admin',
      body: patternGrantBody,
      successStatus: [201, 200],
      handler: async (req, deps) => {
        const name = who(req);
        const { resource_type, pattern, permission } = req.body as z.infer<typeof patternGrantBody>;
        const grantee = await granteeForGrant(deps, g, req.principal.username, name);
        const change = await deps.patternWriter.set(req.principal.username, { grantee, name }, resource_type, pattern, permission);
        return { status: change === 'created' ? 201 : 200, body: { pattern: patternJson(resource_type, pattern, g.type, name, permission) } };
      },
    },
    {
      method: 'DELETE',
      path,
      summary: `Remove a ${g.type}'s pattern grant`,
      access: 'admin',
      query: removeQuery,
      handler: async (req, deps) => {
        const name = who(req);
        const kind = kindFilter(req);
        const pattern = req.query.get('pattern');
        if (kind === undefined) throw badRequest("Missing query parameter 'resource_type'");
        if (pattern === null) throw badRequest("Missing query parameter 'pattern'");
        const grantee = await existingGrantee(deps, g, name);
        const old = await deps.patternWriter.remove(req.principal.username, { grantee, name }, kind, pattern);
        if (old === undefined) throw notFound(`${g.type} '${name}' has no pattern grant on ${kind} pattern '${pattern}'`);
        return { status: 200, body: {} };
      },
    },
  ];
}

/** Every pattern grant, with its grantee's name. */
async function listAll(deps: AdminDeps, kind: ResourceKind | undefined): Promise<PatternGrant[]> {
  return (await deps.patternGrants.named(kind)).map((p) => patternJson(p.kind, p.pattern, p.grantee.type, p.granteeName, p.permission));
}

export const PATTERN_GRANT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/patterns',
    summary: 'List every pattern grant (optionally of one resource_type)',
    access: 'admin',
    query: listQuery,
    handler: async (req, deps) => ({ status: 200, body: { patterns: await listAll(deps, kindFilter(req)) } satisfies PatternGrantsAnswer }),
  },
  ...GRANTEES.flatMap(routesFor),
];
