import { KINDS, type KindSpec, type ResourceKind } from './kind-table.js';
import type { Permission } from './permissions.js';
import { parseScorerId, scorerIdProblem } from './scorer-identity.js';
import { skillIdProblem, skillPathOf } from './skill-identity.js';
import { mcpServerNameProblem, mcpServerPathOf } from './mcp-server-identity.js';
import { DEFAULT_WORKSPACE, MAX_WORKSPACE_NAME, workspaceNameProblem } from '../workspaces/names.js';

export { KINDS, type KindSpec, type ResourceKind } from './kind-table.js';

/** Every kind, in the order lists and forms show them. */
export const RESOURCE_KINDS = Object.keys(KINDS) as readonly ResourceKind[];

export const KIND_SPECS: readonly KindSpec[] = RESOURCE_KINDS.map((k) => KINDS[k]);

export function isResourceKind(word: string): word is ResourceKind {
  return (RESOURCE_KINDS as readonly string[]).includes(word);
}

/** Whether the kind's id is its name (else MLflow is asked for the name): a scorer's `<experiment_id>/<name>` is. */
export const idIsName = (kind: ResourceKind): boolean => KINDS[kind].id !== 'numeric';

type Spec = (typeof KINDS)[ResourceKind];

/*
 * The kinds by name, for the places that genuinely name one (a route catalog row about experiments,
 * a search answer of experiments): typed as the literal, so unions discriminated on `kind` narrow.
 */
export const EXPERIMENT = KINDS.experiment.kind;
export const REGISTERED_MODEL = KINDS.registered_model.kind;
export const PROMPT = KINDS.prompt.kind;
export const GATEWAY_SECRET = KINDS.gateway_secret.kind;
export const GATEWAY_MODEL_DEFINITION = KINDS.gateway_model_definition.kind;
export const GATEWAY_ENDPOINT = KINDS.gateway_endpoint.kind;
export const SKILL = KINDS.skill.kind;
export const SCORER = KINDS.scorer.kind;
export const MCP_SERVER = KINDS.mcp_server.kind;
export const WORKSPACE = KINDS.workspace.kind;

/** The kinds whose id is MLflow's number: their name, which name patterns match, is looked up in MLflow. */
export type NumericKind = Extract<Spec, { id: 'numeric' }>['kind'];

export const NUMERIC_KINDS = KIND_SPECS.filter((k) => k.id === 'numeric').map((k) => k.kind) as readonly NumericKind[];

/** Whether the ref's kind has a numeric id (its name looked up), narrowing a union of refs discriminated on `kind`. */
export function hasNumericId<R extends { readonly kind: ResourceKind }>(ref: R): ref is Extract<R, { readonly kind: NumericKind }> {
  return KINDS[ref.kind].id === 'numeric';
}

/** The kinds MLflow stores as a registered model, told apart by the prompt flag. */
export type ModelKind = Extract<Spec, { stored: { as: typeof REGISTERED_MODEL } }>['kind'];

export const MODEL_KINDS = KIND_SPECS.filter((k) => k.stored.as === REGISTERED_MODEL).map((k) => k.kind) as readonly ModelKind[];

const modelKindFlagged = (prompt: boolean) => MODEL_KINDS.find((k) => KINDS[k].stored.prompt === prompt)!;
const PROMPT_KIND = modelKindFlagged(true);
const MODEL_KIND = modelKindFlagged(false);

/** The kind a registered model's grants are under: its prompt flag decides. */
export function modelKind(isPrompt: boolean): ModelKind {
  return isPrompt ? PROMPT_KIND : MODEL_KIND;
}

/** A pattern grant's `resource_type` and the policy file's grant fields: the kinds' policy names. */
export type PolicyField = Spec['policyField'];

export const POLICY_FIELDS = RESOURCE_KINDS.map((k) => KINDS[k].policyField) as readonly PolicyField[];

/** The kind a policy file's field names. */
export function kindOfPolicyField(field: string): ResourceKind | undefined {
  return KIND_SPECS.find((k) => k.policyField === field)?.kind;
}

/** The kind a `flowgate` command names by one of its words. */
export function kindOfCliWord(word: string): ResourceKind | undefined {
  return KIND_SPECS.find((k) => (k.cli as readonly string[]).includes(word))?.kind;
}

/** The kind an admin API path segment (`experiments`, `registered-models`, `prompts`) names. */
export function kindOfSegment(segment: string): ResourceKind | undefined {
  return KIND_SPECS.find((k) => k.admin.segment === segment)?.kind;
}

/**
 * A resource's name as far as it is known: the id itself for a kind whose id is its name, else the
 * name MLflow answered (`null`: MLflow has no such resource; `undefined`: not looked up).
 */
export function knownName(ref: { readonly kind: ResourceKind; readonly id: string; readonly name?: string | null }): string | null | undefined {
  return idIsName(ref.kind) ? ref.id : ref.name;
}

/** The AI gateway's kinds: keyed by name, named in MLflow's routes by a generated id. */
export type GatewayKind = Extract<Spec, { stored: { as: 'gateway' } }>['kind'];

export const GATEWAY_KINDS = KIND_SPECS.filter((k) => k.stored.as === 'gateway').map((k) => k.kind) as readonly GatewayKind[];

export function isGatewayKind(kind: string): kind is GatewayKind {
  return (GATEWAY_KINDS as readonly string[]).includes(kind);
}

/** The permissions a grant on the kind may give (USE only where MLflow has it). */
export function permissionsOf(kind: ResourceKind): readonly Permission[] {
  return KINDS[kind].permissions;
}

/** Why a grant on the kind may not give `permission` (`Experiments take READ, EDIT, MANAGE, NO_PERMISSIONS, not USE`), or undefined when it may. */
export function permissionRefusal(kind: ResourceKind, permission: Permission): string | undefined {
  const taken = permissionsOf(kind);
  return taken.includes(permission) ? undefined : `${KINDS[kind].ui.title} take ${taken.join(', ')}, not ${permission}`;
}

/**
 * How MLflow lists a gateway kind (one answer holds them all, no paging): the call, the answer's field,
 * each row's name and generated id. A kind looked up in its list has it in its look-up; the others are
 * listed beside their get (`…/get` → `…/list`, the answer's `endpoint` → `endpoints`), as MLflow names them.
 */
export function gatewayListing(kind: GatewayKind): { path: string; list: string; nameField: string; idField: string } {
  const { lookup, generatedId } = KINDS[kind];
  if ('list' in lookup) return { path: lookup.path, list: lookup.list, nameField: lookup.nameField, idField: generatedId.field };
  return { path: generatedId.path.replace(/\/get$/, '/list'), list: `${generatedId.name[0]}s`, nameField: generatedId.name[1], idField: generatedId.field };
}

export function isModelKind(kind: string): kind is ModelKind {
  return (MODEL_KINDS as readonly string[]).includes(kind);
}

/** Whether the kind's grants are keyed in the workspace they were made in (all but a workspace's own membership). */
export const keyedInWorkspace = (kind: ResourceKind): boolean => !('global' in KINDS[kind]);

/** Whether the kind's ids are scoped by an organization (a Skill's `@<organization>/<name>`). */
export const isScoped = (kind: ResourceKind): boolean => 'scoped' in KINDS[kind];

/**
 * Python's `str.isspace()` characters (what MLflow's `name.strip() == ""` strips): JavaScript's `trim()`
 * differs (it strips U+FEFF, which MLflow keeps in a name, and keeps U+0085, which MLflow strips).
 */
const PYTHON_SPACE = /^[\t\n\v\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

/**
 * MLflow's `_validate_model_name` (mlflow/utils/validation.py), which its registry runs on every create,
 * rename and get of a registered model (a prompt is one): not blank, no `/` or `:`, and not a name
 * `posixpath.normpath` changes (without a `/`: `.`, or one starting with `..`).
 */
function registeredModelNameProblem(name: string): string | undefined {
  if (PYTHON_SPACE.test(name)) return 'must not be blank (MLflow takes no registered model or prompt name of whitespace only)';
  if (/[/:]/.test(name)) return `must not contain '/' or ':' (MLflow refuses such a registered model or prompt name)`;
  if (name === '.' || name.startsWith('..')) return `must not be '.' or start with '..' (MLflow refuses a registered model or prompt name that resolves as a path)`;
  return undefined;
}

/** MLflow's `is_valid_endpoint_name` (mlflow/gateway/utils.py), run on a gateway endpoint's create and rename. */
const ENDPOINT_NAME = /^[a-zA-Z0-9_.-]+$/;

/** MLflow's `WorkspaceNameValidator` beyond the pattern (`default` is never checked): 2-63 characters, none of its route words. */
const WORKSPACE_MIN_LENGTH = 2;
const RESERVED_WORKSPACES: ReadonlySet<string> = new Set(['workspaces', 'api', 'ajax-api', 'static-files']);

function mlflowWorkspaceNameProblem(name: string): string | undefined {
  if (name === DEFAULT_WORKSPACE) return undefined;
  if (name.length < WORKSPACE_MIN_LENGTH) return `Workspace name '${name}' must be between ${WORKSPACE_MIN_LENGTH} and ${MAX_WORKSPACE_NAME} characters.`;
  if (RESERVED_WORKSPACES.has(name)) return `Workspace name '${name}' is reserved and cannot be used.`;
  return workspaceNameProblem(name);
}

/**
 * Why the text cannot be the id of a resource of the kind, as MLflow's own checks on creating one
 * refuse it (so no such resource can exist, and MLflow answers a look-up of it with a 400), or
 * undefined. Only rules MLflow enforces: a gateway secret's or model definition's name is any
 * non-empty text, a registered model's and a prompt's (prompts are registered models on the server:
 * the client's stricter prompt rule is not) keep MLflow's `_validate_model_name`.
 */
export function idProblem(kind: ResourceKind, id: string): string | undefined {
  if (KINDS[kind].id === 'in_experiment') return scorerIdProblem(id);
  if (kind === MCP_SERVER) return mcpServerNameProblem(id);
  if (kind === WORKSPACE) return mlflowWorkspaceNameProblem(id);
  if (isScoped(kind)) return skillIdProblem(id);
  if (isModelKind(kind)) return registeredModelNameProblem(id);
  if (kind === GATEWAY_ENDPOINT && !ENDPOINT_NAME.test(id))
    return 'can only contain letters, numbers, underscores, hyphens and dots (MLflow refuses any other gateway endpoint name)';
  return undefined;
}

/**
 * MLflow's call that gets one resource by its id, as method-less path and query: the look-up's query
 * parameter, or the id in the path (a Skill's `@<organization>/<name>` as two segments). Undefined for a
 * kind MLflow finds by name only in its list.
 */
export function lookupCall(kind: ResourceKind, id: string): { readonly path: string; readonly query: Readonly<Record<string, string>> } | undefined {
  const lookup = KINDS[kind].lookup;
  if ('inPath' in lookup) return { path: `${lookup.path}${kind === WORKSPACE ? `/${encodeURIComponent(id)}` : kind === MCP_SERVER ? mcpServerPathOf(id) : skillPathOf(id)}`, query: {} };
  if ('experiment' in lookup) {
    // `<experiment_id>/<name>`: the two query parameters MLflow's get takes.
    const scorer = parseScorerId(id);
    return scorer && { path: lookup.path, query: { [lookup.experiment]: scorer.experimentId, [lookup.param]: scorer.name } };
  }
  if ('param' in lookup) return { path: lookup.path, query: { [lookup.param]: id } };
  return undefined;
}

/**
 * The admin API's path parameters naming one resource of the kind: `:experiment_id/:scorer_name` for a
 * kind whose id is `<experiment_id>/<name>` (as mlflow-oidc-auth spells a scorer's), `:namespace/:name`
 * for an MCP server's `<namespace>/<slug>`, else `:<param>`.
 */
export function adminIdPath(kind: ResourceKind): string {
  const admin: KindSpec['admin'] = KINDS[kind].admin;
  const first = admin.experiment ?? admin.namespace;
  return first === undefined ? `:${admin.param}` : `:${first}/:${admin.param}`;
}

/** The id the admin API's path parameters name (as `adminIdPath` spells them), or undefined when one is missing. */
export function adminIdOf(kind: ResourceKind, params: Readonly<Record<string, string | undefined>>): string | undefined {
  const admin: KindSpec['admin'] = KINDS[kind].admin;
  const last = params[admin.param];
  // A Skill's `@<organization>/<name>`, the organization in a segment of its own (`withScopedTwins`).
  // The id splits at its first `/`, so a first part holding one (sent encoded) would name another resource.
  if (isScoped(kind) && params.organization !== undefined)
    return last === undefined || params.organization.includes('/') ? undefined : `@${params.organization}/${last}`;
  // A scorer's `<experiment_id>/<name>`, an MCP server's `<namespace>/<slug>`.
  const firstParam = admin.experiment ?? admin.namespace;
  if (firstParam === undefined || last === undefined) return last;
  const first = params[firstParam];
  return first === undefined || first.includes('/') ? undefined : `${first}/${last}`;
}

/**
 * The path segments naming one resource in the admin API, each percent-encoded (the inverse of
 * `adminIdOf`): a scorer's experiment and name, an MCP server's namespace and slug, and a Skill's
 * organization and name go in two segments, split at the id's first `/`; any other id is one
 * segment, whatever it holds. flowgate's own routes keep an encoded `/` inside its segment.
 */
export function adminIdSegments(kind: ResourceKind, id: string): string {
  const admin: KindSpec['admin'] = KINDS[kind].admin;
  const twoParts = admin.experiment !== undefined || admin.namespace !== undefined || (isScoped(kind) && id.startsWith('@'));
  const slash = twoParts ? id.indexOf('/') : -1;
  if (slash < 0) return encodeURIComponent(id);
  const first = id.slice(0, slash);
  const scoped = first.startsWith('@') && isScoped(kind);
  return `${scoped ? '@' : ''}${encodeURIComponent(scoped ? first.slice(1) : first)}/${encodeURIComponent(id.slice(slash + 1))}`;
}

/**
 * The id a grant's JSON names (the admin API's answers, keyed as its paths are): a scorer's
 * `<experiment_id>/<name>` from its two fields, else the kind's own field.
 */
export function idOfGrantJson(kind: ResourceKind, grant: Readonly<Record<string, unknown>>): string {
  const admin: KindSpec['admin'] = KINDS[kind].admin;
  const last = grant[admin.param];
  const first = admin.experiment === undefined ? undefined : grant[admin.experiment];
  return typeof first === 'string' && first !== '' ? `${first}/${String(last)}` : String(last);
}

/**
 * An admin API path, and its twin naming a Skill with an organization (`…/skills/:name` also as
 * `…/skills/@:organization/:name`): `@<organization>/<name>` goes in two segments (`adminIdSegments`), as
 * in MLflow's own Skill paths.
 */
export function withScopedTwins(path: string): string[] {
  const paths = [path];
  for (const k of KIND_SPECS) {
    if (!isScoped(k.kind)) continue;
    const one = `/${k.admin.segment}/:${k.admin.param}`;
    const at = path.indexOf(one);
    if (at >= 0 && (path.length === at + one.length || path[at + one.length] === '/'))
      paths.push(`${path.slice(0, at)}/${k.admin.segment}/@:organization/:${k.admin.param}${path.slice(at + one.length)}`);
  }
  return paths;
}

/** "an experiment", "a prompt", "an MCP server": an acronym takes the article its first letter's name does. */
export const withArticle = (noun: string): string => `${/^[aeiou]/i.test(noun) || /^[AEFHILMNORSX][A-Z]+\b/.test(noun) ? 'an' : 'a'} ${noun}`;
