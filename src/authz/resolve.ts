import { FlowgateError, badRequest } from '../errors.js';
import { EXPERIMENT, GATEWAY_ENDPOINT, type GatewayKind, isModelKind, MCP_SERVER, MODEL_KINDS, modelKind, PROMPT, SCORER, SKILL, WORKSPACE } from '../resources/kinds.js';
import { mcpServerNameProblem } from '../resources/mcp-server-identity.js';
import { scorerId, scorerNameProblem } from '../resources/scorer-identity.js';
import { organizationProblem, skillId, skillNameProblem } from '../resources/skill-identity.js';
import { judgeEndpoints, judgeTraceIds, reflectionEndpoint, sourcePromptName } from './job-inputs.js';
import { LATEST_OF_EACH, latestOfEach, registeredScorersOf, type RegisteredScorer } from './registered-scorers.js';
import type { readOtlpExport } from './otlp-trace-ids.js';
import { PROMPT_TAG, type MlflowLookups } from './mlflow-lookups.js';
import type { IdLocation, IdSource, ResourceRef, RouteEntry } from './types.js';
import { artifactPrefixWorkspace, experimentSegmentOf, WORKSPACES_DIR } from '../workspaces/artifact-paths.js';
import type { WorkspaceMode } from '../workspaces/workspace-mode.js';

export interface ResolveRequest {
  readonly method: string;
  readonly query: URLSearchParams;
  /** Parsed JSON body, or undefined when there is none. */
  readonly body: unknown;
  readonly params: Record<string, string>;
  readonly headers: Record<string, string | string[] | undefined>;
  /** The body's bytes, for rows whose ids are not in JSON (OTLP exports). */
  readonly raw?: Buffer;
}

/** Synchronous when nothing needs looking up (ids in the request, or already cached): no promise per request. */
export type ResourceResolver = (entry: RouteEntry, request: ResolveRequest) => ResourceRef[] | Promise<ResourceRef[]>;

/** Id sources that need a look-up in MLflow (resolve() answers the others synchronously). */
type LookedUpId = Exclude<
  IdSource,
  { kind: 'none' | 'experiment_id' | 'experiment_ids' | 'artifact_path' | 'run_id' | 'otlp_trace_ids' | 'usage_experiment' | 'skill' | 'skills_registered' | 'scorer' | 'mcp_server' | 'prompt_uri' | 'scorer_names' | 'workspace' | 'registered_scorers' }
>;

/** Decompressed OTLP bodies larger than this are refused rather than inflated. */
const MAX_OTLP_BYTES = 64 * 1024 * 1024;

/** More ids than this in one request is refused rather than looked up one by one. */
const MAX_IDS = 1000;

const camelCase = (name: string) => name.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());

/**
 * MLflow accepts a field under its proto name and its lowerCamelCase JSON name. Field names come
 * from the route catalog (a bounded set), so each is worked out once.
 */
const spellingsOf = new Map<string, readonly string[]>();
export function spellings(name: string): readonly string[] {
  let known = spellingsOf.get(name);
  if (known === undefined) spellingsOf.set(name, (known = [...new Set([name, camelCase(name)])]));
  return known;
}
const pathsOf = new Map<string, readonly string[]>();
function dottedPath(field: string): readonly string[] {
  let known = pathsOf.get(field);
  if (known === undefined) pathsOf.set(field, (known = field.split('.')));
  return known;
}

/** Older MLflow clients post their JSON body double-encoded as a string; MLflow decodes it again. */
function bodyObject(body: unknown): Record<string, unknown> | undefined {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/**
 * Every leaf found under a dotted path (from `depth` on), trying both spellings at each level,
 * added to `out`. Runs for every id read from a body, so it appends rather than building arrays.
 */
function bodyLeaves(node: unknown, path: readonly string[], out: unknown[] = [], depth = 0): unknown[] {
  if (depth === path.length) {
    out.push(node);
    return out;
  }
  // A list of objects on the way (`models.model_id`): every element's leaves.
  if (Array.isArray(node)) {
    for (const item of node) bodyLeaves(item, path, out, depth);
    return out;
  }
  if (typeof node !== 'object' || node === null) return out;
  for (const key of spellings(path[depth]!))
    if (Object.hasOwn(node, key)) bodyLeaves((node as Record<string, unknown>)[key], path, out, depth + 1);
  return out;
}

/** Every value under a dotted body path (both spellings at each level, lists walked). */
export function bodyLeavesOf(body: unknown, field: string): unknown[] {
  return bodyLeaves(bodyObject(body), dottedPath(field));
}

function addStrings(value: unknown, field: string, out: string[]): void {
  if (value === null || value === undefined) return;
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) addStrings(item, field, out);
  else throw badRequest(`Parameter '${field}' must be a string`);
}

/** Node joins a repeated header into one comma-separated string; the tracker reads only the first. */
function headerValues(headers: ResolveRequest['headers'], name: string): string[] {
  const value = headers[name.toLowerCase()];
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim());
}

/**
 * Every value the request gives for a field, from each place MLflow might read it. `auto` reads
 * both the query and the body whatever the method, so any second copy must agree; readOne and
 * readMany also refuse a field given only where MLflow does not read it (placeMlflowReads).
 */
function collect(request: ResolveRequest, from: IdLocation, field: string, out: string[] = []): string[] {
  switch (from) {
    case 'param': {
      const value = request.params[field];
      if (value !== undefined) out.push(value);
      // Some handlers act on a body copy of the path's id (finalizing a logged model reads
      // `model_id` from the body): any copy in the query or body must name the same object.
      if (field !== '*') collect(request, 'auto', field, out);
      return out;
    }
    case 'header':
      for (const value of headerValues(request.headers, field)) out.push(value);
      return out;
    case 'query':
      // MLflow reads a query parameter under the field's own name only: a lowerCamelCase twin would be
      // decided on here and never seen there (a list MLflow then runs unscoped).
      for (const name of spellings(field))
        if (name !== field && request.query.has(name)) throw badRequest(`Parameter '${name}' is not read from a query string: write '${field}'`);
      for (const value of request.query.getAll(field)) out.push(value);
      return out;
    case 'body':
      for (const leaf of bodyLeaves(bodyObject(request.body), dottedPath(field))) addStrings(leaf, field, out);
      return out;
    case 'auto':
      collect(request, 'query', field, out);
      return collect(request, 'body', field, out);
  }
}

/**
 * The values under `key` in maps or `{key, value}` lists (trace metadata). Keys are compared
 * trimmed and case-insensitively, as a database collation might, so a near-spelling is not missed.
 */
function entryValues(containers: readonly unknown[], key: string, field: string): string[] {
  const wanted = key.toLowerCase();
  const matches = (k: unknown) => typeof k === 'string' && k.trim().toLowerCase() === wanted;
  const out: string[] = [];
  for (const container of containers) {
    if (Array.isArray(container)) {
      for (const item of container)
        if (typeof item === 'object' && item !== null && matches((item as { key?: unknown }).key)) addStrings((item as { value?: unknown }).value, field, out);
    } else if (typeof container === 'object' && container !== null) {
      for (const [k, v] of Object.entries(container)) if (matches(k)) addStrings(v, field, out);
    }
  }
  return out;
}

/** The OTLP reader (and protobuf runtime) is loaded with the first OTLP export: most deployments never send one. */
let otlpReader: typeof readOtlpExport | undefined;
let loadingOtlp: Promise<void> | undefined;
export function loadOtlpReader(): Promise<void> {
  return (loadingOtlp ??= import('./otlp-trace-ids.js').then((m) => {
    otlpReader = m.readOtlpExport;
  }));
}

/** The OTLP export a request carries (its raw body read as MLflow reads it), or undefined without one. */
export function otlpExportOf(request: ResolveRequest) {
  if (request.raw === undefined) return undefined;
  if (otlpReader === undefined) throw new Error('OTLP reader used before loadOtlpReader()');
  return otlpReader(request.raw, headerValues(request.headers, 'content-type')[0], headerValues(request.headers, 'content-encoding')[0], MAX_OTLP_BYTES);
}

/** The distinct non-empty values, in order of appearance. */
function present(values: readonly string[]): string[] {
  if (values.length === 0) return [];
  if (values.length === 1) return values[0] === '' ? [] : [values[0]!];
  return [...new Set(values.filter((v) => v !== ''))];
}

/** Whether the query string has any parameter at all (Flask's `request.args` is then not empty). */
function hasQuery(query: URLSearchParams): boolean {
  for (const _ of query.keys()) return true;
  return false;
}

/**
 * The one place MLflow's protobuf handlers read an `auto` field from: a GET's query string when it has
 * any parameter (its JSON body otherwise), every other method's JSON body.
 */
function placeMlflowReads(request: ResolveRequest): 'query' | 'body' {
  return request.method === 'GET' && hasQuery(request.query) ? 'query' : 'body';
}

/**
 * An `auto` field given only where MLflow does not read it is a 400: flowgate would decide on a scope
 * MLflow never sees, and a search or list MLflow runs without one covers everything.
 */
function refuseUnreadPlace(request: ResolveRequest, fields: readonly string[]): void {
  const place = placeMlflowReads(request);
  const other = place === 'query' ? 'body' : 'query';
  const given = (where: IdLocation) => fields.some((f) => present(collect(request, where, f)).length > 0);
  if (!given(other) || given(place)) return;
  const field = fields[0]!;
  throw badRequest(
    place === 'body'
      ? `Parameter '${field}' must be given in the JSON body: MLflow does not read it from the query string of a ${request.method}`
      : `Parameter '${field}' must be given in the query string: MLflow reads a GET's body only when it has no query string`,
  );
}

/** The one value of a single-valued field; a second, different value anywhere is a 400. */
function readOne(request: ResolveRequest, from: IdLocation, field: string, alias?: string): string | undefined {
  if (from === 'auto') refuseUnreadPlace(request, alias ? [field, alias] : [field]);
  const found = collect(request, from, field);
  if (alias) collect(request, from, alias, found);
  const values = present(found);
  if (values.length > 1) {
    const names = alias ? `'${field}' / '${alias}'` : `'${field}'`;
    throw badRequest(`Conflicting values for parameter ${names}`);
  }
  return values[0];
}

/** A path's wildcard segment: MLflow reads no other copy, but any there is must agree, as a path id's must. */
function readWildcard(request: ResolveRequest, field: string): string | undefined {
  const values = present(collect(request, 'auto', field, collect(request, 'param', field)));
  if (values.length > 1) throw badRequest(`Conflicting values for path segment '${field}'`);
  return values[0];
}

/** A repeated field: the query's copy and the body's copy, when both are given, must be the same set. */
function readMany(request: ResolveRequest, from: IdLocation, field: string): string[] {
  if (from === 'auto') {
    const inQuery = present(collect(request, 'query', field));
    const inBody = present(collect(request, 'body', field));
    if (inQuery.length > 0 && inBody.length > 0) {
      const same = inQuery.length === inBody.length && inQuery.every((v) => inBody.includes(v));
      if (!same) throw badRequest(`Conflicting values for parameter '${field}'`);
    }
    refuseUnreadPlace(request, [field]);
    return placeMlflowReads(request) === 'query' ? inQuery : inBody;
  }
  return present(collect(request, from, field));
}

/**
 * The raw value(s) an id source names, for the proxy's own use (after-hooks, logs). Throws 400
 * on conflicting copies; returns [] when the field is absent.
 */
export function readField(id: IdSource, request: ResolveRequest): string[] {
  switch (id.kind) {
    case 'none':
      return [];
    case 'experiment_ids':
    case 'run_ids':
    case 'trace_ids':
    case 'logged_model_ids':
    case 'model_names':
    case 'scorer_names':
      return readMany(request, id.from, id.field);
    case 'otlp_trace_ids':
      return [...(otlpExportOf(request)?.traceIds ?? [])];
    case 'gateway_id': {
      const value = readOne(request, id.from, id.field);
      const name = id.orName === undefined ? undefined : readOne(request, id.from, id.orName);
      if (value !== undefined && name !== undefined) throw badRequest(`Exactly one of '${id.field}' or '${id.orName}' must be given`);
      const one = value ?? name;
      return one === undefined ? [] : [one];
    }
    case 'gateway_name': {
      // MLflow's router matches `/{endpoint}/mlflow/invocations` before `/proxy/{endpoint}/{path}`.
      if (id.form === 'proxy' && request.params[id.field] === 'mlflow' && request.params['*'] === 'invocations') return ['proxy'];
      // Gemini's endpoint is in the wildcard segment, whose copies elsewhere (none MLflow reads) must agree like any path id's.
      const value = id.form === 'gemini' ? readWildcard(request, id.field) : readOne(request, id.from, id.field);
      return value === undefined ? [] : [value];
    }
    case 'gateway_ids':
      return readMany(request, id.from, id.field);
    case 'skill':
      if (id.when !== undefined && !bodySays(request, id.when.field, id.when.value)) return [];
      return [skillOfPath(request.params)];
    case 'skills_registered':
      return skillsRegistered(request);
    case 'mcp_server':
      return [mcpServerOfPath(request.params)];
    case 'workspace':
      return readMany(request, id.from, id.field);
    case 'reflection_endpoint': {
      const config = readOne(request, id.from, id.field);
      const endpoint = config === undefined ? undefined : reflectionEndpoint(config);
      return endpoint === undefined ? [] : [endpoint];
    }
    case 'judge_endpoints':
      return [...new Set(readMany(request, id.from, id.field).flatMap((text) => judgeEndpoints(text, id.field)))];
    case 'judge_traces':
      return [...new Set(readMany(request, id.from, id.field).flatMap((text) => judgeTraceIds(text, id.field)))];
    case 'registered_scorers':
      // The names; which endpoints their stored judges call takes a look-up (resolve).
      return [...new Set(registeredScorersNamed(id, request).map((s) => s.name))];
    case 'run_id': {
      if (id.entry !== undefined) {
        const values = present(entryValues(bodyLeavesOf(request.body, id.field), id.entry, id.field));
        if (values.length > 1) throw badRequest(`Conflicting values for '${id.entry}' in '${id.field}'`);
        return values;
      }
      const value = readOne(request, id.from, id.field, id.alias);
      return value === undefined ? [] : [value];
    }
    default: {
      const value = readOne(request, id.from, id.field);
      return value === undefined ? [] : [value];
    }
  }
}

/**
 * The registered scorers a request makes MLflow load: a version beside each name (read as MLflow's handler
 * reads the pair), or bare names read where MLflow reads the list, each at its latest version.
 */
function registeredScorersNamed(id: Extract<IdSource, { kind: 'registered_scorers' }>, request: ResolveRequest): RegisteredScorer[] {
  if (id.versions === LATEST_OF_EACH) return latestOfEach(readMany(request, id.from, id.field), id.field);
  return registeredScorersOf(bodyObject(request.body), id);
}

/**
 * The MCP server a path names: `<namespace>/<slug>`, as MLflow's basic-auth reads it. A name MLflow
 * would refuse (a reserved slug such as `versions` among them) is a 400, so the path cannot be read as
 * one server here and routed to another (a shorter name) by MLflow's greedy `{name:path}`.
 */
function mcpServerOfPath(params: Record<string, string>): string {
  const name = `${params.namespace ?? ''}/${params.slug ?? ''}`;
  const problem = mcpServerNameProblem(name);
  if (problem !== undefined) throw badRequest(`Invalid MCP server in the path: ${problem}`);
  return name;
}

/** Whether the body's field holds the value (a string, trimmed, in any case: stricter than MLflow's exact match). */
function bodySays(request: ResolveRequest, field: string, value: string): boolean {
  return bodyLeavesOf(request.body, field).some((v) => typeof v === 'string' && v.trim().toLowerCase() === value);
}

/**
 * The Skill a path names: its `name`, scoped by `organization` when the route has one. Only the path:
 * MLflow reads the identity from it (a registration's metadata must repeat it, or MLflow refuses), and
 * a registration's body may be a multipart upload flowgate never reads. A name or organization MLflow
 * would refuse is a 400 here, so only MLflow's one spelling of a Skill is decided on.
 */
function skillOfPath(params: Record<string, string>): string {
  const name = params.name;
  const organization = params.organization ?? '';
  // `/skills/@/<name>` names no organization's Skill (MLflow routes it nowhere), nor the one without.
  const problem = skillNameProblem(name) ?? ('organization' in params && organization === '' ? 'an empty organization after @' : organizationProblem(organization));
  if (problem !== undefined) throw badRequest(`Invalid Skill in the path: ${problem}`);
  return skillId({ organization, name: name! });
}

/** A bulk registration's Skills: each `skills[].name` in the body's `organization` (MLflow's request model, read strictly). */
function skillsRegistered(request: ResolveRequest): string[] {
  const body = bodyObject(request.body);
  if (body === undefined) throw badRequest('A bulk Skill registration needs a JSON object body');
  const organization = Object.hasOwn(body, 'organization') ? body.organization : '';
  const orgProblem = organizationProblem(organization);
  if (orgProblem !== undefined) throw badRequest(`Invalid 'organization': ${orgProblem}`);
  const skills = body.skills;
  if (!Array.isArray(skills) || skills.length === 0) throw badRequest("'skills' must be a non-empty list");
  if (skills.length > MAX_IDS) throw badRequest(`Too many Skills in one registration (at most ${MAX_IDS})`);
  return skills.map((skill, i) => {
    const name = typeof skill === 'object' && skill !== null && !Array.isArray(skill) ? (skill as Record<string, unknown>).name : undefined;
    const problem = skillNameProblem(name);
    if (problem !== undefined) throw badRequest(`Invalid 'skills[${i}].name': ${problem}`);
    return skillId({ organization: organization as string, name: name as string });
  });
}

/**
 * Gemini's `models/<endpoint>:generateContent` and `:streamGenerateContent` (the wildcard after
 * `models/`): the endpoint, read as MLflow's router reads it (everything before the last action).
 */
function geminiEndpoint(action: string): string {
  const found = /^([^/]+):(?:generateContent|streamGenerateContent)$/.exec(action);
  if (!found) throw badRequest("A Gemini gateway route is 'models/<endpoint>:generateContent' or ':streamGenerateContent'");
  return found[1]!;
}

/**
 * The endpoint an invocation's body names (`model`): MLflow's gateway takes the field as it is, so
 * anything but one non-empty string is refused here, before MLflow sees it.
 */
function bodyEndpointName(request: ResolveRequest, field: string): string {
  const leaves = bodyLeavesOf(request.body, field);
  if (leaves.length === 0 || leaves[0] === undefined || leaves[0] === null) throw badRequest(`Missing required '${field}' parameter in request body`);
  const [leaf] = leaves;
  if (leaves.length > 1 || typeof leaf !== 'string' || leaf === '') throw badRequest(`Parameter '${field}' must be the name of a gateway endpoint (one non-empty string)`);
  return leaf;
}

function requireOne(id: Exclude<IdSource, { kind: 'none' }>, request: ResolveRequest): string {
  const [value] = readField(id, request);
  if (value === undefined) {
    const where = id.from === 'header' ? 'header' : id.from === 'param' ? 'path segment' : 'parameter';
    const name = id.field === '*' ? 'artifact path' : id.field;
    throw badRequest(`Missing value for required ${where} '${name}'`);
  }
  return value;
}

function requireMany(id: Exclude<IdSource, { kind: 'none' }>, request: ResolveRequest): string[] {
  const values = readField(id, request);
  if (values.length === 0) throw badRequest(`Missing value for required parameter '${id.field}'`);
  if (values.length > MAX_IDS) throw badRequest(`Too many values for parameter '${id.field}' (at most ${MAX_IDS})`);
  return values;
}

/**
 * `<experiment_id>/<run_id>/artifacts/...`, `<experiment_id>/models/<id>/...`: the first segment; with
 * MLflow's workspaces on (`workspace` is then the request's) also `workspaces/<workspace>/<experiment_id>/...`,
 * where every experiment's artifacts are in that mode: the segment after the prefix, which must name
 * the request's workspace (see experimentSegmentOf).
 */
function experimentOfArtifactPath(path: string, field: string, workspace: string | undefined): string {
  const segments = path.split('/');
  if (segments.some((s) => s === '..' || s === '.') || path.includes('\\')) {
    throw badRequest(`Invalid artifact path in '${field}'`);
  }
  const found = experimentSegmentOf(segments, workspace);
  if ('problem' in found) throw badRequest(found.problem);
  const id = segments[found.at];
  if (!id) throw badRequest(`Artifact path in '${field}' must ${found.at === 0 ? 'start with' : `name after '${WORKSPACES_DIR}/${workspace}/'`} an experiment id`);
  return canonicalExperimentId(id, field === '*' ? 'artifact path' : field);
}

/**
 * MLflow's SQL store runs experiment ids through Python's int(), which also accepts ' 01', '+1',
 * '1_0' and non-ASCII digits. Only the canonical spelling is let through, so the id flowgate
 * decides on is the experiment MLflow acts on.
 */
export function canonicalExperimentId(id: string, field: string): string {
  if (!/^(0|[1-9][0-9]{0,18})$/.test(id)) throw badRequest(`Parameter '${field}' must be an experiment id in plain decimal`);
  return id;
}

/** An AI-gateway object named by a generated id MLflow does not have (see ResourceRef). */
export const isMissingRef = (ref: ResourceRef): boolean => 'missing' in ref && ref.missing === true;

/** The experiment of that id, as a resource decided on. */
export const experimentRef = (id: string): ResourceRef => ({ kind: EXPERIMENT, id });

/** The experiments of these ids, each once. */
export const experimentRefs = (ids: Iterable<string>): ResourceRef[] => [...new Set(ids)].map(experimentRef);

const requestedExperiments = (ids: readonly string[], field: string): ResourceRef[] =>
  experimentRefs(ids.map((id) => canonicalExperimentId(id, field)));

function tagsSayPrompt(tags: unknown): boolean {
  if (!Array.isArray(tags)) return false;
  return tags.some(
    (tag) =>
      typeof tag === 'object' &&
      tag !== null &&
      (tag as { key?: unknown }).key === PROMPT_TAG &&
      String((tag as { value?: unknown }).value).toLowerCase() === 'true',
  );
}

/**
 * The experiments of the objects a client-chosen id names that already exist (ids that exist
 * nowhere yet are left out): MLflow updates an existing object rather than refusing the id.
 */
export type ExistingResolver = (id: IdSource, request: ResolveRequest) => Promise<ResourceRef[]>;

/** An endpoint's usage tracking as the body sets it: MLflow reads a JSON boolean; anything else is taken as possibly on. */
function trackingIn(request: ResolveRequest): boolean | undefined {
  const value = bodyLeavesOf(request.body, 'usage_tracking')[0];
  return value === undefined || value === null ? undefined : value !== false;
}

/** `gateway/<endpoint name>` when MLflow will get or create it for the endpoint's usage traces; else nothing. */
async function usageExperimentName(lookups: MlflowLookups, id: Extract<IdSource, { kind: 'usage_experiment' }>, request: ResolveRequest): Promise<string | undefined> {
  // A body that names the experiment is checked as such (EDIT on it), and MLflow makes none.
  if (readField({ kind: 'experiment_id', field: 'experiment_id', from: 'body' }, request).length > 0) return undefined;
  const tracking = trackingIn(request);
  const given = bodyLeavesOf(request.body, id.field)[0];
  const named = typeof given === 'string' && given !== '' ? given : undefined;
  if (id.on === 'create') return tracking === false || named === undefined ? undefined : `gateway/${named}`;
  if (tracking !== true) return undefined;
  const [endpointId] = readField({ kind: 'gateway_id', of: GATEWAY_ENDPOINT, field: 'endpoint_id', from: 'auto' }, request);
  if (endpointId === undefined || lookups.gatewayObject === undefined) return undefined;
  const endpoint = await lookups.gatewayObject(GATEWAY_ENDPOINT, endpointId, true).catch((e: unknown) => {
    if (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') return undefined;
    throw e;
  });
  // No such endpoint (MLflow refuses), or one that keeps the experiment it has.
  if (endpoint === undefined || endpoint.experimentId !== undefined) return undefined;
  return `gateway/${named ?? endpoint.name}`;
}

/**
 * The scorer a request names: its experiment in plain decimal (as for any experiment id) and a name
 * MLflow would store (not blank), each given once wherever MLflow reads it.
 */
export function scorerNamed(id: Extract<IdSource, { kind: 'scorer' }>, request: ResolveRequest): ResourceRef {
  const experimentId = canonicalExperimentId(requireOne({ kind: 'experiment_id', field: id.experiment, from: id.from }, request), id.experiment);
  const name = requireOne(id, request);
  const problem = scorerNameProblem(name);
  if (problem !== undefined) throw badRequest(`Parameter '${id.field}': ${problem}`);
  return { kind: SCORER, id: scorerId({ experimentId, name }) };
}

/** The experiment a scorer source names its scorers in: plain decimal, given once wherever MLflow reads it. */
const scorersExperiment = (id: { readonly experiment: string; readonly from: IdLocation }, request: ResolveRequest): string =>
  canonicalExperimentId(requireOne({ kind: 'experiment_id', field: id.experiment, from: id.from }, request), id.experiment);

/** Every scorer a list names, in the one experiment the request names. */
function scorersNamed(id: Extract<IdSource, { kind: 'scorer_names' }>, request: ResolveRequest): ResourceRef[] {
  const experimentId = canonicalExperimentId(requireOne({ kind: 'experiment_id', field: id.experiment, from: id.from }, request), id.experiment);
  return [...new Set(requireMany(id, request))].map((name) => {
    const problem = scorerNameProblem(name);
    if (problem !== undefined) throw badRequest(`Parameter '${id.field}': ${problem}`);
    return { kind: SCORER, id: scorerId({ experimentId, name }) };
  });
}

export function createExistingResolver(lookups: MlflowLookups): ExistingResolver {
  return async (id, request) => {
    if (id.kind === 'scorer') {
      // Registering a name the experiment already has adds a version to that scorer.
      const ref = scorerNamed(id, request);
      if (lookups.scorerExists === undefined) throw new Error('no scorer look-ups');
      return (await lookups.scorerExists(ref.id)) ? [ref] : [];
    }
    if (id.kind === 'usage_experiment') {
      const name = await usageExperimentName(lookups, id, request);
      if (name === undefined) return [];
      const existing = await lookups.experimentIdByName(name).catch((e: unknown) => {
        if (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') return undefined;
        throw e;
      });
      return existing === undefined ? [] : [{ kind: EXPERIMENT, id: existing, name }];
    }
    if (id.kind !== 'trace_id' && id.kind !== 'trace_ids' && id.kind !== 'otlp_trace_ids')
      throw new Error(`client-chosen ids of kind ${id.kind} are not supported`);
    const ids = readField(id, request);
    if (ids.length > MAX_IDS) throw badRequest(`Too many traces in one request (at most ${MAX_IDS})`);
    const found = await Promise.all(
      ids.map((traceId) =>
        lookups.experimentOfTrace(traceId).catch((e: unknown) => {
          if (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') return undefined;
          throw e;
        }),
      ),
    );
    return experimentRefs(found.filter((e): e is string => e !== undefined));
  };
}

export interface ResolverOptions {
  /** Whether MLflow runs with workspaces (absent: without), for the artifact paths it roots per workspace. */
  readonly workspaceMode?: Pick<WorkspaceMode, 'enabled'>;
}

export function createResourceResolver(lookups: MlflowLookups, options: ResolverOptions = {}): ResourceResolver {
  /** An AI-gateway object by its generated id: its name, or (MLflow has none) a ref no grant bears on. */
  async function gatewayById(kind: GatewayKind, id: string, need: RouteEntry['need']): Promise<ResourceRef> {
    if (lookups.gatewayObject === undefined) throw new Error('no AI-gateway look-ups');
    try {
      // Reading may rest on a cached name; changing or spending it asks MLflow now.
      return { kind, id: (await lookups.gatewayObject(kind, id, need !== 'read')).name };
    } catch (e) {
      if (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') return { kind, id, missing: true };
      throw e;
    }
  }

  /**
   * An AI-gateway object by the name a client sent: an endpoint is decided under the name MLflow
   * finds for it (a collation may match another spelling), a name MLflow does not have as it was sent
   * (grants given on a name before it exists count, as for registered models).
   */
  async function gatewayByName(kind: GatewayKind, name: string): Promise<ResourceRef> {
    if (kind !== GATEWAY_ENDPOINT) return { kind, id: name };
    if (lookups.gatewayEndpointName === undefined) throw new Error('no AI-gateway look-ups');
    try {
      return { kind, id: await lookups.gatewayEndpointName(name) };
    } catch (e) {
      // No such endpoint, or an MLflow whose get takes no name: decided on the name as sent.
      if (e instanceof FlowgateError && (e.code === 'RESOURCE_DOES_NOT_EXIST' || e.code === 'INVALID_PARAMETER_VALUE')) return { kind, id: name };
      throw e;
    }
  }

  /**
   * The AI-gateway endpoints the stored judges of registered scorers call: MLflow's job worker loads each
   * version and calls them unseen. A version MLflow does not have is its 404 (the caller may read the
   * scorer: that was checked first); one stored under another spelling of the name is a 400, since the
   * caller's right was decided on the name sent. A bare name (its latest version) MLflow has no scorer
   * for calls nothing here: it is a built-in scorer, or one the worker does not find either.
   */
  async function registeredJudgeEndpoints(experimentId: string, scorers: readonly RegisteredScorer[], field: string): Promise<ResourceRef[]> {
    const lookUp = lookups.registeredScorer;
    if (lookUp === undefined) throw new Error('no scorer look-ups');
    const stored = await Promise.all(
      scorers.map((s) =>
        s.version !== 'latest'
          ? lookUp(experimentId, s.name, s.version)
          : lookUp(experimentId, s.name, s.version).catch((e: unknown) => {
              if (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') return undefined;
              throw e;
            }),
      ),
    );
    stored.forEach((one, i) => {
      if (one !== undefined && one.name !== scorers[i]!.name) throw badRequest(`Parameter '${field}': name the registered scorer '${one.name}' as MLflow stores it`);
    });
    const names = [...new Set(stored.flatMap((one) => (one === undefined ? [] : judgeEndpoints(one.serializedScorer, field))))];
    return Promise.all(names.map((name) => gatewayByName(GATEWAY_ENDPOINT, name)));
  }

  /** A registration's Skills, each marked `missing` when MLflow has none yet (the request would make it): asked of MLflow now. */
  async function skillsAsFound(refs: readonly ResourceRef[]): Promise<ResourceRef[]> {
    if (lookups.skillExists === undefined) throw new Error('no Skill look-ups');
    const found = await Promise.all(refs.map((ref) => lookups.skillExists!(ref.id)));
    return refs.map((ref, i) => (found[i] ? ref : { kind: SKILL, id: ref.id, missing: true }));
  }

  /** A server a first version's create would make: marked `missing` when MLflow has none (asked of MLflow now). */
  async function mcpServerAsFound(ref: ResourceRef): Promise<ResourceRef[]> {
    if (lookups.mcpServerExists === undefined) throw new Error('no MCP server look-ups');
    return [(await lookups.mcpServerExists(ref.id)) ? ref : { kind: MCP_SERVER, id: ref.id, missing: true }];
  }

  async function modelRefs(entry: RouteEntry, request: ResolveRequest, name: string): Promise<ResourceRef[]> {
    if (isModelKind(entry.resource)) return [{ kind: entry.resource, id: name }];
    // Setting or removing the prompt tag turns a model into a prompt or back: the caller must
    // hold the right on both sides, or a model grant could be used to reach prompt grants.
    if (readOne(request, 'auto', 'key') === PROMPT_TAG) {
      return MODEL_KINDS.map((kind) => ({ kind, id: name }));
    }
    if (entry.need === 'create') return [{ kind: modelKind(tagsSayPrompt(bodyLeaves(bodyObject(request.body), ['tags'])[0])), id: name }];
    const prompt = await lookups.isPrompt(name).catch((e: unknown) => {
      if (e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST') return undefined;
      throw e;
    });
    // A name MLflow does not have is decided as both kinds: refused like a hidden model or prompt
    // unless the caller could read it whichever it were (then MLflow's own 404 answers).
    if (prompt === undefined)
      return MODEL_KINDS.map((kind) => ({ kind, id: name }));
    return [{ kind: modelKind(prompt), id: name }];
  }

  function resolve(entry: RouteEntry, request: ResolveRequest): ResourceRef[] | Promise<ResourceRef[]> {
    const id = entry.id;
    switch (id.kind) {
      case 'none':
        return [];
      case 'experiment_id':
        return requestedExperiments([requireOne(id, request)], id.field);
      case 'experiment_ids':
        return requestedExperiments(requireMany(id, request), id.field);
      case 'artifact_path':
        return experimentRefs([experimentOfArtifactPath(requireOne(id, request), id.field, artifactPrefixWorkspace(options.workspaceMode))]);
      case 'otlp_trace_ids':
        throw new Error('OTLP trace ids are client-chosen: resolve them with resolveExisting');
      case 'usage_experiment':
        throw new Error("an endpoint's usage experiment is client-chosen: resolve it with resolveExisting");
      case 'skill':
      case 'skills_registered': {
        const refs = [...new Set(id.kind === 'skill' ? [requireOne(id, request)] : requireMany(id, request))].map((one): ResourceRef => ({ kind: SKILL, id: one }));
        return entry.createsMissing ? skillsAsFound(refs) : refs;
      }
      case 'scorer':
        return [scorerNamed(id, request)];
      case 'prompt_uri':
        return [{ kind: PROMPT, id: sourcePromptName(requireOne(id, request)) }];
      case 'scorer_names':
        return scorersNamed(id, request);
      case 'registered_scorers': {
        const named = registeredScorersNamed(id, request);
        const experimentId = scorersExperiment(id, request);
        if (id.yields === 'judge_endpoints') return registeredJudgeEndpoints(experimentId, named, id.field);
        return [...new Set(named.map((s) => s.name))].map((name): ResourceRef => ({ kind: SCORER, id: scorerId({ experimentId, name }) }));
      }
      case 'workspace':
        return [{ kind: WORKSPACE, id: requireOne(id, request) }];
      case 'mcp_server': {
        const ref: ResourceRef = { kind: MCP_SERVER, id: requireOne(id, request) };
        return entry.createsMissing ? mcpServerAsFound(ref) : [ref];
      }
      case 'run_id': {
        const runId = requireOne(id, request);
        const known = lookups.knownExperimentOfRun?.(runId);
        return known === undefined ? lookups.experimentOfRun(runId).then((e) => experimentRefs([e])) : experimentRefs([known]);
      }
      default:
        return resolveLookingUp(entry, id, request);
    }
  }
  return resolve;

  /** The ids resolve() cannot answer from the request or the cache: a compile error if one is missing here. */
  async function resolveLookingUp(entry: RouteEntry, id: LookedUpId, request: ResolveRequest): Promise<ResourceRef[]> {
    switch (id.kind) {
      case 'experiment_name':
        return experimentRefs([await lookups.experimentIdByName(requireOne(id, request))]);
      case 'run_ids':
        return experimentRefs(await Promise.all(requireMany(id, request).map((r) => lookups.experimentOfRun(r))));
      case 'logged_model_id':
        return experimentRefs([await lookups.experimentOfLoggedModel(requireOne(id, request))]);
      case 'logged_model_ids':
        return experimentRefs(await Promise.all(requireMany(id, request).map((m) => lookups.experimentOfLoggedModel(m))));
      case 'trace_id':
        return experimentRefs([await lookups.experimentOfTrace(requireOne(id, request))]);
      case 'trace_ids':
      case 'judge_traces':
        return experimentRefs(await Promise.all(requireMany(id, request).map((t) => lookups.experimentOfTrace(t))));
      case 'model_name':
        return modelRefs(entry, request, requireOne(id, request));
      case 'model_names': {
        // Only for rows that say which kind the names are (prompts linked to a trace): no look-up per name.
        const kind = entry.resource;
        if (!isModelKind(kind)) throw new Error(`model_names needs a row of a model kind (${MODEL_KINDS.join(', ')}), not ${kind}`);
        return requireMany(id, request).map((name) => ({ kind, id: name }));
      }
      case 'owned_id':
        return experimentRefs([await lookups.experimentOfOwned(id.owner, requireOne(id, request))]);
      case 'dataset_id':
        // No experiments: no refs, which decide() refuses (MLflow's basic-auth refuses it too).
        return experimentRefs(await lookups.experimentsOfDataset(requireOne(id, request)));
      case 'gateway_id': {
        const value = readOne(request, id.from, id.field);
        const [one] = readField(id, request);
        if (one === undefined) throw badRequest(`Missing value for required parameter '${id.field}'`);
        return [await (value !== undefined ? gatewayById(id.of, one, entry.need) : gatewayByName(id.of, one))];
      }
      case 'gateway_ids': {
        const refs = await Promise.all([...new Set(requireMany(id, request))].map((one) => gatewayById(id.of, one, entry.need)));
        return refs.filter((ref, i) => refs.findIndex((r) => r.id === ref.id && isMissingRef(r) === isMissingRef(ref)) === i);
      }
      case 'reflection_endpoint':
        return [await gatewayByName(GATEWAY_ENDPOINT, requireOne(id, request))];
      case 'judge_endpoints':
        return Promise.all(readField(id, request).map((name) => gatewayByName(GATEWAY_ENDPOINT, name)));
      case 'gateway_name':
        if (id.from === 'body') return [await gatewayByName(id.of, bodyEndpointName(request, id.field))];
        // Gemini's segment is `<endpoint>:<action>` (readField gives it whole).
        return [await gatewayByName(id.of, id.form === 'gemini' ? geminiEndpoint(requireOne(id, request)) : requireOne(id, request))];
      default: {
        const unhandled: never = id;
        throw new Error(`no resolver for id kind ${(unhandled as IdSource).kind}`);
      }
    }
  }
}
