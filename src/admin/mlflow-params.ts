import { z } from 'zod';
import { patternProblem } from '../authz/pattern-match.js';
import type { Permission, ResourceKind } from '../authz/types.js';
import { badRequest } from '../errors.js';
import { isGatewayKind, isResourceKind, permissionsOf } from '../resources/kinds.js';
import { heldIdSchema, kindPermissionMessage, resourceIdSchema } from './validation.js';

/**
 * The parameters of MLflow basic-auth's own routes (`mlflow.server.auth`), read as its handlers read
 * them, and translated into flowgate's grants. One place, so the role routes and the per-user
 * permission routes refuse the same input with the same words.
 */

/** A role's or role permission's id: a JSON number, or digits in a query string (as MLflow's `_get_int_request_param`). */
export const mlflowIdSchema = z.union([z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), z.string().regex(/^[0-9]{1,15}$/).transform(Number)], {
  message: 'must be an integer',
});

/** The workspace every role lives in until flowgate serves MLflow's workspaces to roles. */
export const ROLE_WORKSPACE = 'default';

/**
 * The seam for workspaces: a role's `workspace` as MLflow's clients send it. Groups (which roles are)
 * hold across workspaces in flowgate, so only `default` is served; any other is refused, not ignored,
 * so a script that means another workspace learns it did not get one.
 */
export function roleWorkspace(value: string): string {
  if (value === ROLE_WORKSPACE) return value;
  throw badRequest(`Workspace '${value}' is not served: flowgate keeps roles in the '${ROLE_WORKSPACE}' workspace only`);
}

/** MLflow's grantable levels on a resource (`RESOURCE_GRANTABLE_PERMISSIONS`): DENY is flowgate's NO_PERMISSIONS, which also wins over every grant. */
export const MLFLOW_LEVELS = ['READ', 'USE', 'EDIT', 'MANAGE', 'DENY'] as const;
export type MlflowLevel = (typeof MLFLOW_LEVELS)[number];
export const mlflowLevelSchema = z.enum(MLFLOW_LEVELS, { message: `must be one of ${MLFLOW_LEVELS.join(', ')}` });

export const fromMlflowLevel = (level: MlflowLevel): Permission => (level === 'DENY' ? 'NO_PERMISSIONS' : level);
export const toMlflowLevel = (permission: Permission): string => (permission === 'NO_PERMISSIONS' ? 'DENY' : permission);

/** MLflow's level as flowgate keeps it on a kind; refused when the kind does not take it (USE on an experiment). */
export function levelOn(kind: ResourceKind, level: MlflowLevel): Permission {
  const permission = fromMlflowLevel(level);
  if (!permissionsOf(kind).includes(permission)) throw badRequest(`permission ${kindPermissionMessage(kind)}${level === 'DENY' ? ' (DENY is NO_PERMISSIONS)' : ''}`);
  return permission;
}

/** MLflow's tiers below a container: flowgate decides each by the container it belongs to. */
const DECIDED_BY: Readonly<Record<string, string>> = {
  run: 'experiment',
  trace: 'experiment',
  assessment: 'experiment',
  logged_model: 'experiment',
  review_queue: 'experiment',
  registered_model_version: 'registered_model',
  prompt_version: 'prompt',
  scorer_version: 'scorer',
  mcp_server_version: 'mcp_server',
};

/** Where a role permission or a user's grant lands in flowgate: a grant on one resource, or a pattern grant on every one of a kind. */
export type GrantTarget =
  | { readonly shape: 'grant'; readonly kind: ResourceKind; readonly id: string; readonly permission: Permission }
  | { readonly shape: 'pattern'; readonly kind: ResourceKind; readonly pattern: string; readonly permission: Permission };

/**
 * MLflow's `(resource_type, resource_pattern, permission)` as flowgate keeps it: `*` is a pattern grant
 * matching every name, an id is a grant on that resource; `workspace` is membership of the role's
 * workspace. Anything flowgate cannot keep exactly is refused rather than widened or narrowed. An id
 * must be one MLflow can hold (`resourceIdSchema`: its own name rules for the kind), except where a grant
 * already kept is looked for (`held`: read or revoked), so one made before those rules stays removable.
 */
export function grantTarget(resourceType: string, pattern: string, level: MlflowLevel, workspace: string, held = false): GrantTarget {
  const parent = DECIDED_BY[resourceType];
  if (parent !== undefined)
    throw badRequest(`resource_type '${resourceType}' is not kept by flowgate: it decides a ${resourceType} by its ${parent}; grant on the ${parent} instead`);
  if (!isResourceKind(resourceType))
    throw badRequest(`Invalid resource type '${resourceType}'. Valid resource types are: ${[...RESOURCE_TYPES].sort().join(', ')}`);
  const kind = resourceType;
  const permission = levelOn(kind, level);
  if ((kind as string) === 'workspace') {
    if (pattern !== '*') throw badRequest(`Invalid resource_pattern '${pattern}' for resource_type='workspace'. This resource type supports only wildcard ('*') grants.`);
    return { shape: 'grant', kind, id: workspace, permission };
  }
  if (pattern === '*') {
    const problem = patternProblem(pattern);
    if (problem !== undefined) throw badRequest(`resource_pattern ${problem}`);
    return { shape: 'pattern', kind, pattern, permission };
  }
  if (isGatewayKind(kind))
    throw badRequest(
      `A ${kind} is granted by name in flowgate, not by MLflow's generated id: use '*' here, or the grant routes under /api/2.0/mlflow/permissions (by the ${kind}'s name)`,
    );
  const id = kind === 'scorer' ? scorerIdOf(pattern) : pattern;
  const parsed = (held ? heldIdSchema : resourceIdSchema)(kind).safeParse(id);
  if (!parsed.success) throw badRequest(`Invalid resource id '${pattern}' for resource_type='${kind}': ${parsed.error.issues[0]?.message ?? 'not an id'}`);
  return { shape: 'grant', kind, id, permission };
}

/** MLflow keys a scorer as `<experiment_id>/<url-quoted name>`; flowgate as `<experiment_id>/<name>`. */
function scorerIdOf(pattern: string): string {
  const at = pattern.indexOf('/');
  if (at < 0) throw badRequest("Invalid scorer resource_id. Expected '<experiment_id>/<scorer_name>'.");
  try {
    return `${pattern.slice(0, at)}/${decodeURIComponent(pattern.slice(at + 1))}`;
  } catch {
    throw badRequest(`Invalid scorer resource_id '${pattern}': its name is not URL-encoded`);
  }
}

/** flowgate's id of a grant as MLflow shows it (`resource_pattern`). */
export const mlflowPatternOf = (kind: ResourceKind, id: string): string => {
  if (kind !== 'scorer') return id;
  const at = id.indexOf('/');
  return at < 0 ? id : `${id.slice(0, at)}/${encodeURIComponent(id.slice(at + 1))}`;
};

/** The resource types MLflow 3.17 names, for the message refusing any other. */
const RESOURCE_TYPES = new Set([
  'experiment',
  'registered_model',
  'prompt',
  'scorer',
  'gateway_secret',
  'gateway_endpoint',
  'gateway_model_definition',
  'mcp_server',
  'workspace',
  ...Object.keys(DECIDED_BY),
]);
