import {
  GraphQLError,
  Kind,
  parse,
  valueFromASTUntyped,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { badRequest } from '../errors.js';
import { EXPERIMENT } from '../resources/kinds.js';
import { isResourceNeed } from '../resources/permissions.js';
import { ROUTE_CATALOG } from './catalog.js';
import type { ResolveRequest, ResourceResolver } from './resolve.js';
import type { HttpMethod, Need, ResourceRef, RouteEntry } from './types.js';

/*
 * MLflow's GraphQL endpoint (3.17.2: mlflow/server/graphql/) authorized field by field like the
 * REST route each field calls. MLflow runs the document in the JSON body for GET and POST alike
 * (`_get_request_json`), so that is what is read; the query string is only used when a GET has no
 * body (MLflow then fails with a 500, but flowgate does not let it see a denied document first).
 *
 * Each top-level field maps to its REST twin's catalog row: the twin's id source reads the field's
 * `input` argument (variables and defaults substituted), which carries the same names in
 * lowerCamelCase, so the twin's resolution, checks and 400s apply unchanged. Anything not in the
 * table is admin-only.
 *
 * Nested fields: every object below a top-level field belongs to the resource already checked,
 * except `modelVersions` (a run's versions, and the versions a model-version search returns),
 * which MLflow resolves with an unfiltered registry search. Those lists are filtered in the answer
 * per registered model / prompt, as REST's filtered model-version search is.
 *
 * Paging a model-version search cannot be filtered here (MLflow's page holds `maxResults` versions,
 * hidden ones included, and its token counts them): a non-admin's search is one page of up to MLflow's
 * cap, so `maxResults` and `pageToken` are refused and `nextPageToken` is removed from the answer.
 * REST's /model-versions/search pages with sealed tokens instead.
 */

export const GRAPHQL_LIMITS = {
  /** Characters in the document (MLflow's UI sends ~2,000). */
  maxDocumentChars: 64 * 1024,
  maxTokens: 10_000,
  /** Field nesting, fragments expanded; MLflow's own limit is 10. */
  maxDepth: 10,
  /** Top-level fields: each may cost look-ups. MLflow's default limit is 10. */
  maxRootFields: 10,
  /** Aliased fields in the whole operation. */
  maxAliases: 30,
  /** Selections visited with fragments expanded; MLflow's own limit is 1,000. */
  maxSelections: 1_000,
} as const;

/** One top-level field and what it needs. `twin` resolves `input` to the resources. */
export interface GraphqlFieldCheck {
  /** The schema field name (never the alias), e.g. `mlflowGetRun`. */
  readonly field: string;
  readonly need: Need;
  readonly twin?: RouteEntry;
  /** The field's `input` argument with variables substituted; undefined when absent. */
  readonly input: unknown;
}

/**
 * A list of model versions in the answer: response keys from `data`, and the keys holding `name`.
 * With `pageToken`, the path leads to MLflow's page token of a model-version search instead, which
 * is removed (it counts hidden versions).
 */
export interface ModelVersionList {
  readonly path: readonly string[];
  readonly nameKeys: readonly string[];
  readonly pageToken?: true;
}

export interface GraphqlPlan {
  readonly operation: 'query' | 'mutation' | 'subscription';
  readonly checks: readonly GraphqlFieldCheck[];
  readonly modelVersionLists: readonly ModelVersionList[];
}

export interface GraphqlFieldDecision {
  readonly field: string;
  readonly need: Need;
  readonly refs: readonly ResourceRef[];
}

interface FieldRule {
  readonly need: Need;
  readonly twin?: RouteEntry;
  /** Field-name paths below this field that are model-version lists. */
  readonly modelVersions?: ReadonlyArray<readonly string[]>;
  /** Input keys a non-admin may not send, with why, and the answer's page-token field names to remove. */
  readonly paging?: { readonly refused: readonly string[]; readonly why: string; readonly tokens: readonly string[] };
}

function restTwin(method: HttpMethod, pattern: string): FieldRule {
  const twin = ROUTE_CATALOG.find((row) => row.method === method && row.pattern === pattern);
  if (!twin) throw new Error(`GraphQL policy: no catalog row for ${method} ${pattern}`);
  return { need: twin.need, twin };
}

/**
 * REST narrows a run search to the readable experiments; a GraphQL document cannot be narrowed
 * without rewriting it, so every listed experiment must be readable (else 403).
 */
const SEARCH_RUNS: FieldRule = {
  need: 'read',
  twin: {
    method: 'POST',
    pattern: '/api/2.0/mlflow/runs/search',
    need: 'read',
    resource: EXPERIMENT,
    id: { kind: 'experiment_ids', field: 'experiment_ids', from: 'body' },
  },
  modelVersions: [['runs', 'modelVersions']],
};

const INTROSPECTION: FieldRule = { need: 'authenticated' };
/** MLflow's echo fields: no REST twin, nothing a user needs. */
const ECHO: FieldRule = { need: 'admin' };

const V2 = '/api/2.0/mlflow';

/** Top-level fields per operation type. MLflow puts its two read-only searches on Mutation. */
const FIELDS: Readonly<Record<GraphqlPlan['operation'], Readonly<Record<string, FieldRule>>>> = {
  query: {
    mlflowGetExperiment: restTwin('GET', `${V2}/experiments/get`),
    mlflowGetRun: { ...restTwin('GET', `${V2}/runs/get`), modelVersions: [['run', 'modelVersions']] },
    mlflowListArtifacts: restTwin('GET', `${V2}/artifacts/list`),
    mlflowGetMetricHistoryBulkInterval: restTwin('GET', `${V2}/metrics/get-history-bulk-interval`),
    mlflowSearchRuns: SEARCH_RUNS,
    mlflowSearchModelVersions: {
      ...restTwin('GET', `${V2}/model-versions/search`),
      modelVersions: [['modelVersions']],
      paging: {
        refused: ['maxResults', 'pageToken'],
        why: "answers one page of up to MLflow's limit; page with the REST search /api/2.0/mlflow/model-versions/search",
        tokens: ['nextPageToken'],
      },
    },
    __typename: INTROSPECTION,
    __schema: INTROSPECTION,
    __type: INTROSPECTION,
    test: ECHO,
  },
  mutation: {
    mlflowSearchRuns: SEARCH_RUNS,
    mlflowSearchDatasets: restTwin('POST', '/ajax-api/2.0/mlflow/experiments/search-datasets'),
    __typename: INTROSPECTION,
    testMutation: ECHO,
  },
  subscription: {},
};

/** The top-level fields the policy knows, for the schema coverage test. */
export const KNOWN_ROOT_FIELDS = {
  query: Object.keys(FIELDS.query).filter((f) => !f.startsWith('__')),
  mutation: Object.keys(FIELDS.mutation).filter((f) => !f.startsWith('__')),
} as const;

interface GraphqlRequest {
  readonly query: string;
  readonly variables: Record<string, unknown>;
  readonly operationName: string | undefined;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function fromParts(query: unknown, variables: unknown, operationName: unknown): GraphqlRequest {
  if (typeof query !== 'string' || query === '') throw badRequest("GraphQL request needs a 'query' string");
  if (query.length > GRAPHQL_LIMITS.maxDocumentChars)
    throw badRequest(`GraphQL document is longer than ${GRAPHQL_LIMITS.maxDocumentChars} characters`);
  if (variables !== undefined && variables !== null && !isObject(variables))
    throw badRequest("GraphQL 'variables' must be an object");
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
    throw badRequest("GraphQL 'operationName' must be a string");
  return { query, variables: isObject(variables) ? variables : {}, operationName: operationName ?? undefined };
}

/** `{query, variables, operationName}` from the JSON body, or for a body-less GET from the query string. */
export function graphqlRequest(method: string, query: URLSearchParams, body: unknown): GraphqlRequest {
  if (body !== undefined) {
    if (!isObject(body)) throw badRequest('GraphQL request body must be a JSON object');
    if (query.has('query')) throw badRequest("GraphQL 'query' given in both the body and the query string");
    return fromParts(body.query, body.variables, body.operationName);
  }
  if (method !== 'GET') throw badRequest('GraphQL request needs a JSON body');
  for (const name of ['query', 'variables', 'operationName'])
    if (query.getAll(name).length > 1) throw badRequest(`GraphQL parameter '${name}' given more than once`);
  const rawVariables = query.get('variables');
  let variables: unknown;
  if (rawVariables !== null && rawVariables !== '') {
    try {
      variables = JSON.parse(rawVariables) as unknown;
    } catch {
      throw badRequest("GraphQL 'variables' is not valid JSON");
    }
  }
  return fromParts(query.get('query') ?? undefined, variables, query.get('operationName') ?? undefined);
}

function parseDocument(source: string): DocumentNode {
  try {
    return parse(source, { noLocation: true, maxTokens: GRAPHQL_LIMITS.maxTokens });
  } catch (err) {
    const message = err instanceof GraphQLError ? err.message : 'unreadable';
    throw badRequest(`Malformed GraphQL document: ${message}`);
  }
}

/** graphql-core's choice (what MLflow executes): the named operation, or the only one. */
function selectOperation(doc: DocumentNode, operationName: string | undefined): OperationDefinitionNode {
  const operations = doc.definitions.filter((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const names = operations.flatMap((op) => (op.name ? [op.name.value] : []));
  if (new Set(names).size !== names.length) throw badRequest('GraphQL document names two operations alike');
  if (operationName === undefined) {
    if (operations.length !== 1) throw badRequest('GraphQL document has several operations and no operationName');
    return operations[0]!;
  }
  const picked = operations.find((op) => op.name?.value === operationName);
  if (!picked) throw badRequest(`GraphQL document has no operation named '${operationName}'`);
  return picked;
}

interface Budget {
  selections: number;
  aliases: number;
}

/**
 * The fields of one selection set with inline fragments and spreads expanded (directives such as
 * @skip are ignored: a skipped field is checked all the same). `seen` is the fragments being
 * expanded on the way here, to refuse cycles.
 */
function fieldsOf(
  set: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  seen: ReadonlySet<string>,
  budget: Budget,
): Array<{ field: FieldNode; seen: ReadonlySet<string> }> {
  const out: Array<{ field: FieldNode; seen: ReadonlySet<string> }> = [];
  const visit = (s: SelectionSetNode, path: ReadonlySet<string>) => {
    for (const sel of s.selections) {
      budget.selections += 1;
      if (budget.selections > GRAPHQL_LIMITS.maxSelections)
        throw badRequest(`GraphQL document has more than ${GRAPHQL_LIMITS.maxSelections} selections`);
      switch (sel.kind) {
        case Kind.FIELD:
          if (sel.alias) budget.aliases += 1;
          if (budget.aliases > GRAPHQL_LIMITS.maxAliases)
            throw badRequest(`GraphQL document has more than ${GRAPHQL_LIMITS.maxAliases} aliases`);
          out.push({ field: sel, seen: path });
          break;
        case Kind.INLINE_FRAGMENT:
          visit(sel.selectionSet, path);
          break;
        case Kind.FRAGMENT_SPREAD: {
          const name = sel.name.value;
          const fragment = fragments.get(name);
          if (!fragment) throw badRequest(`GraphQL document spreads unknown fragment '${name}'`);
          if (path.has(name)) throw badRequest(`GraphQL fragment '${name}' spreads itself`);
          visit(fragment.selectionSet, new Set([...path, name]));
          break;
        }
      }
    }
  };
  visit(set, seen);
  return out;
}

function checkDepth(
  set: SelectionSetNode,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  seen: ReadonlySet<string>,
  depth: number,
  budget: Budget,
): void {
  if (depth > GRAPHQL_LIMITS.maxDepth) throw badRequest(`GraphQL document is nested deeper than ${GRAPHQL_LIMITS.maxDepth}`);
  for (const { field, seen: path } of fieldsOf(set, fragments, seen, budget))
    if (field.selectionSet) checkDepth(field.selectionSet, fragments, path, depth + 1, budget);
}

const responseKey = (field: FieldNode) => field.alias?.value ?? field.name.value;

/** Where, below `set`, the field-name `path` leads: response-key paths and the keys holding `name`. */
function locate(
  set: SelectionSetNode | undefined,
  path: readonly string[],
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  prefix: readonly string[],
): ModelVersionList[] {
  if (!set) return [];
  const [head, ...rest] = path;
  const budget = { selections: 0, aliases: 0 };
  const fields = fieldsOf(set, fragments, new Set(), budget).map((f) => f.field);
  if (head === undefined) {
    const nameKeys = [...new Set(fields.filter((f) => f.name.value === 'name').map(responseKey))];
    return [{ path: prefix, nameKeys }];
  }
  return fields
    .filter((f) => f.name.value === head)
    .flatMap((f) => locate(f.selectionSet, rest, fragments, [...prefix, responseKey(f)]));
}

/** The response-key paths of the fields named `name` directly in `set`, as page tokens to remove. */
function locateLeaf(
  set: SelectionSetNode | undefined,
  name: string,
  fragments: ReadonlyMap<string, FragmentDefinitionNode>,
  prefix: readonly string[],
): ModelVersionList[] {
  if (!set) return [];
  const fields = fieldsOf(set, fragments, new Set(), { selections: 0, aliases: 0 }).map((f) => f.field);
  const keys = new Set(fields.filter((f) => f.name.value === name).map(responseKey));
  return [...keys].map((key) => ({ path: [...prefix, key], nameKeys: [], pageToken: true as const }));
}

/** The operation's variables: the given ones, else each definition's default. */
function variablesOf(op: OperationDefinitionNode, given: Record<string, unknown>): Record<string, unknown> {
  const vars: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const def of op.variableDefinitions ?? []) {
    const name = def.variable.name.value;
    if (Object.hasOwn(given, name)) vars[name] = given[name];
    else if (def.defaultValue) vars[name] = valueFromASTUntyped(def.defaultValue);
  }
  return vars;
}

/**
 * Parses and checks a GraphQL request and says what each top-level field needs. Pure: throws a
 * 400 FlowgateError for anything malformed or over a limit; denial is the caller's decision.
 */
export function planGraphql(method: string, query: URLSearchParams, body: unknown): GraphqlPlan {
  const request = graphqlRequest(method, query, body);
  const doc = parseDocument(request.query);
  const op = selectOperation(doc, request.operationName);
  const fragments = new Map(
    doc.definitions
      .filter((d): d is FragmentDefinitionNode => d.kind === Kind.FRAGMENT_DEFINITION)
      .map((d) => [d.name.value, d] as const),
  );
  checkDepth(op.selectionSet, fragments, new Set(), 1, { selections: 0, aliases: 0 });
  const roots = fieldsOf(op.selectionSet, fragments, new Set(), { selections: 0, aliases: 0 }).map((f) => f.field);
  if (roots.length > GRAPHQL_LIMITS.maxRootFields)
    throw badRequest(`GraphQL document has more than ${GRAPHQL_LIMITS.maxRootFields} top-level fields`);

  const variables = variablesOf(op, request.variables);
  const table = FIELDS[op.operation];
  const checks: GraphqlFieldCheck[] = [];
  const modelVersionLists: ModelVersionList[] = [];
  for (const field of roots) {
    const name = field.name.value;
    const rule: FieldRule = Object.hasOwn(table, name) ? table[name]! : { need: 'admin' };
    const arg = field.arguments?.find((a) => a.name.value === 'input');
    const input = arg ? valueFromASTUntyped(arg.value, variables) : undefined;
    checks.push({ field: name, need: rule.need, input, ...(rule.twin ? { twin: rule.twin } : {}) });
    for (const path of rule.modelVersions ?? [])
      modelVersionLists.push(...locate(field.selectionSet, path, fragments, [responseKey(field)]));
    if (rule.paging) {
      for (const key of rule.paging.refused)
        if (isObject(input) && input[key] !== undefined && input[key] !== null)
          throw badRequest(`GraphQL field '${name}' does not take '${key}': it ${rule.paging.why}`);
      for (const token of rule.paging.tokens) modelVersionLists.push(...locateLeaf(field.selectionSet, token, fragments, [responseKey(field)]));
    }
  }
  return { operation: op.operation, checks, modelVersionLists: byResponsePath(modelVersionLists) };
}

/**
 * One list per response-key path. GraphQL merges every selection of a field under one response key
 * (`modelVersions { name } ...V` with `V` selecting `modelVersions { version }`) into one list of the
 * merged objects, so the keys that hold a version's model name are those of every selection there; a
 * list filtered once per selection would be emptied by the one that selects no name. A path whose
 * selections hold no name key at all still drops every version, and a page token stays a page token.
 */
function byResponsePath(lists: readonly ModelVersionList[]): ModelVersionList[] {
  const merged = new Map<string, { path: readonly string[]; nameKeys: Set<string>; pageToken: boolean }>();
  for (const list of lists) {
    const key = JSON.stringify(list.path);
    const found = merged.get(key);
    if (found === undefined) merged.set(key, { path: list.path, nameKeys: new Set(list.nameKeys), pageToken: list.pageToken === true });
    else {
      for (const name of list.nameKeys) found.nameKeys.add(name);
      found.pageToken ||= list.pageToken === true;
    }
  }
  return [...merged.values()].map(({ path, nameKeys, pageToken }) => (pageToken ? { path, nameKeys: [...nameKeys], pageToken } : { path, nameKeys: [...nameKeys] }));
}

/** Each check's resources, resolved through its REST twin exactly as the REST request would be. */
export async function resolveGraphqlChecks(plan: GraphqlPlan, resolve: ResourceResolver): Promise<GraphqlFieldDecision[]> {
  return Promise.all(
    plan.checks.map(async (check) => {
      if (!check.twin || !isResourceNeed(check.need))
        return { field: check.field, need: check.need, refs: [] };
      const request: ResolveRequest = {
        method: check.twin.method,
        query: new URLSearchParams(),
        body: check.input ?? {},
        params: {},
        headers: {},
      };
      return { field: check.field, need: check.need, refs: await resolve(check.twin, request) };
    }),
  );
}

/**
 * Drops, in place, every model version of the answer's listed lists whose model the caller may not
 * read; a version without its `name` selected cannot be judged and is dropped too. Lists on the same
 * response-key path are one list (see byResponsePath). Listed page tokens become null.
 */
export async function filterModelVersions(
  answer: unknown,
  lists: readonly ModelVersionList[],
  canRead: (modelName: string) => Promise<boolean>,
): Promise<void> {
  const verdicts = new Map<string, Promise<boolean>>();
  const readable = (name: string) => {
    let verdict = verdicts.get(name);
    if (!verdict) verdicts.set(name, (verdict = canRead(name).catch(() => false)));
    return verdict;
  };
  const nameOf = (item: unknown, keys: readonly string[]) => {
    if (!isObject(item)) return undefined;
    const name = keys.map((k) => item[k]).find((v) => typeof v === 'string' && v !== '');
    return name as string | undefined;
  };
  async function walk(node: unknown, path: readonly string[], keys: readonly string[], pageToken: boolean): Promise<void> {
    if (Array.isArray(node)) {
      await Promise.all(node.map((item) => walk(item, path, keys, pageToken)));
      return;
    }
    if (!isObject(node)) return;
    const [head, ...rest] = path as [string, ...string[]];
    const value = node[head];
    if (rest.length > 0) return walk(value, rest, keys, pageToken);
    if (pageToken) {
      if (head in node) node[head] = null;
      return;
    }
    if (!Array.isArray(value)) return;
    const keep = await Promise.all(
      value.map(async (item) => {
        const name = nameOf(item, keys);
        return name !== undefined && (await readable(name));
      }),
    );
    node[head] = value.filter((_, i) => keep[i]);
  }
  const data = isObject(answer) ? answer.data : undefined;
  for (const list of byResponsePath(lists)) if (list.path.length > 0) await walk(data, list.path, list.nameKeys, list.pageToken === true);
}
