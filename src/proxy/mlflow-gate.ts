import type { ServerResponse } from 'node:http';
import type { AuditLog } from '../audit/audit-log.js';
import { decide, type Decision } from '../authz/decide.js';
import type { GraphqlFieldDecision } from '../authz/graphql-policy.js';
import type { GrantsRepo } from '../authz/grants-repo.js';
import type { MappingForgetter } from '../authz/mapping-forgetter.js';
import type { CachedMlflowLookups, ReviewQueueByName } from '../authz/mlflow-lookups.js';
import { modelVersionSourceRefs } from '../authz/model-source.js';
import { queueRuleAllows } from '../authz/queue-rule.js';
import type { PolicyReader } from '../authz/policy.js';
import { guardedField } from '../authz/field-guards.js';
import { readField, spellings, type ExistingResolver, type ResourceResolver, type ResolveRequest } from '../authz/resolve.js';
import type { RouteMatcher } from '../authz/route-matcher.js';
import type { AfterHook, AlsoCheck, IdSource, Need, Permission, ResourceRef, RouteEntry } from '../authz/types.js';
import { badRequest, forbidden, sendJson, sendJsonText, unauthenticated } from '../errors.js';
import type { Logger } from '../logging.js';
import type { Principal } from '../principals/types.js';
import type { Db } from '../store/database.js';
import { filteredSearch } from './after/filtered-search.js';
import type { PageTokenSealer } from './after/page-token-sealer.js';
import { listedExperiments, narrowedRequest, type ExperimentList } from './after/narrow-experiments.js';
import { relayAfter } from './after/relay.js';
import { rewriteJsonAnswer } from './after/rewrite-json.js';
import { SEARCH_KINDS } from './after/search-specs.js';
import type { UpstreamJson } from '../upstream/json-client.js';
import { readBody } from './body.js';
import { readMlflowJson } from './mlflow-json.js';
import type { GateNotes, GatePass, GateRequest, MlflowGate } from './gate.js';

export interface MlflowGateDeps {
  readonly matcher: RouteMatcher;
  readonly resolve: ResourceResolver;
  /** The experiments of client-chosen ids that already exist (traces). */
  readonly resolveExisting: ExistingResolver;
  readonly lookups: CachedMlflowLookups;
  /** Forgets a changed mapping here and in every flowgate on the store (after MLflow made the change). */
  readonly mappings: MappingForgetter;
  readonly policy: PolicyReader;
  readonly grants: GrantsRepo;
  readonly audit: AuditLog;
  readonly db: Db;
  readonly grantsChanged: (...refs: ResourceRef[]) => void;
  readonly upstream: UpstreamJson;
  readonly defaultPermission: Permission;
  readonly createRequiresAdmin: boolean;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  /** Seals the page tokens of filtered searches. */
  readonly pageTokens: PageTokenSealer;
}

/** Hooks that filter a search for non-administrators, narrowing its request or its answer. */
const SEARCH_FILTERS: readonly AfterHook[] = [
  'filter_search_runs',
  'filter_search_traces',
  'filter_search_experiments',
  'filter_search_logged_models',
  'filter_search_registered_models',
  'filter_search_model_versions',
];

/** Hooks that read the request's JSON body even when the route's id does not come from it. */
const HOOKS_READING_BODY: ReadonlySet<AfterHook> = new Set<AfterHook>([
  'grant_creator_registered_model',
  'forget_written_traces',
  'forget_prompt_flag',
  'forget_review_queue',
  'stamp_review_completed_by',
  'move_registered_model_grants',
  'drop_registered_model_grants',
  ...SEARCH_FILTERS,
]);

/** An answer flowgate must filter (GraphQL, review-queue lists) is held in memory up to this size; a larger one is refused. */
const REWRITTEN_ANSWER_MAX_BYTES = 64 * 1024 * 1024;

/** Hooks whose work on the body concerns administrators too (the rest only filter or check non-admins). */
const HOOKS_READING_BODY_FOR_ADMINS: ReadonlySet<AfterHook> = new Set<AfterHook>([
  'grant_creator_registered_model',
  'forget_written_traces',
  'forget_prompt_flag',
  'forget_review_queue',
  'stamp_review_completed_by',
  'move_registered_model_grants',
  'drop_registered_model_grants',
]);

/** A queue opened by name: read like any id, so a second, different copy is a 400 rather than a choice. */
const REVIEW_QUEUE_NAME: IdSource = { kind: 'owned_id', owner: 'review_queue', field: 'name', from: 'auto' };

/** The GraphQL parser is loaded on the first GraphQL request: most deployments' programs never send one. */
let graphqlPolicy: Promise<typeof import('../authz/graphql-policy.js')> | undefined;
const loadGraphqlPolicy = () => (graphqlPolicy ??= import('../authz/graphql-policy.js'));

/** Answers the caller with MLflow's answer to the look-up that decided the request (the same call). */
function relayLookedUp(status: number, raw: Buffer, seconds: number): NonNullable<GatePass['respond']> {
  return (res, context) => {
    context.onUpstream?.(status, seconds);
    sendJsonText(res, status, raw);
    return Promise.resolve();
  };
}

/**
 * The body holds, or may hold, an id the decision reads: a body or `auto` field, or a path id some
 * handler may also read from the body (all copies must agree; artifact paths are never in a body).
 */
const idInBody = (id: IdSource, method: string) =>
  id.kind !== 'none' && (id.from === 'auto' || id.from === 'body' || (id.from === 'param' && id.kind !== 'artifact_path' && method !== 'GET'));

function needsBody(method: string, entry: RouteEntry, isAdmin: boolean): boolean {
  // An administrator's request is not resolved or filtered: it streams unless a hook needs its body.
  if (isAdmin) return method !== 'GET' && entry.after !== undefined && HOOKS_READING_BODY_FOR_ADMINS.has(entry.after);
  // MLflow runs the GraphQL document in the JSON body for GET too.
  if (entry.after === 'graphql') return true;
  if (method === 'GET') return false;
  if (entry.after && HOOKS_READING_BODY.has(entry.after)) return true;
  if (entry.need === 'create') return true;
  if (entry.alsoReads !== undefined || entry.guards !== undefined) return true;
  // Every id the decision reads must be there to read: the main one and each further one.
  return idInBody(entry.id, method) || (entry.also?.some((a) => idInBody(a.id, method)) ?? false);
}

/** The decision needs the resource the request names (a non-admin's read/edit/manage, or a hook's). */
function resolveNeeded(entry: RouteEntry, principal: Principal): boolean {
  return (
    (!principal.isAdmin && (entry.need === 'read' || entry.need === 'edit' || entry.need === 'manage')) ||
    entry.after === 'grant_creator_registered_model'
  );
}

/** Hooks that only filter or check what non-administrators see: for an administrator they do nothing. */
const HOOKS_FOR_NON_ADMINS_ONLY: ReadonlySet<AfterHook> = new Set<AfterHook>([
  ...SEARCH_FILTERS,
  'filter_review_queues',
  'filter_found_datasets',
  'graphql',
]);

/** The route's after-hook has work to do for this caller. */
const hookApplies = (entry: RouteEntry, principal: Principal) =>
  entry.after !== undefined && !(principal.isAdmin && HOOKS_FOR_NON_ADMINS_ONLY.has(entry.after));

/** Checks beyond the route's own resource, which administrators skip. */
function hasMoreChecks(entry: RouteEntry, principal: Principal): boolean {
  return (
    !principal.isAdmin &&
    (entry.also !== undefined || entry.queueRule !== undefined || entry.alsoReads !== undefined || entry.guards !== undefined)
  );
}

function experimentList(entry: RouteEntry): ExperimentList {
  if (entry.after === 'filter_search_runs') return { in: 'body', shape: 'experiment_ids' };
  return entry.method === 'GET' ? { in: 'query', field: 'experiment_ids' } : { in: 'body', shape: 'trace_locations' };
}

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

function denied(principal: Principal, need: string, refs: readonly ResourceRef[], decision: Decision, context = '') {
  const what = refs.length ? ` on ${refs.map((ref) => `${ref.kind.replace('_', ' ')} '${ref.id}'`).join(', ')}` : '';
  return forbidden(`Permission denied: ${principal.username} may not ${need}${what}${context}`, decision.reason);
}

/**
 * The enforcement gate: match the catalog row, resolve the resource, decide, and arrange the
 * after-response work. Anything it cannot classify or resolve is denied (or answered 4xx/5xx).
 */
export function createMlflowGate(deps: MlflowGateDeps): MlflowGate {
  function decideFor(principal: Principal, need: RouteEntry['need'], refs: readonly ResourceRef[]): Decision {
    return decide({
      isAdmin: principal.isAdmin,
      need,
      facts: refs.map((ref) => deps.policy.factsFor(principal, ref)),
      defaultPermission: deps.defaultPermission,
      createRequiresAdmin: deps.createRequiresAdmin,
    });
  }

  const canRead = (principal: Principal, refs: readonly ResourceRef[]) => refs.length > 0 && decideFor(principal, 'read', refs).allow;

  /**
   * The creator gets MANAGE. MLflow just made the resource, so any grant already on its id belongs
   * to an older resource that was removed outside flowgate (`mlflow gc` frees experiment ids for
   * reuse; a model deleted directly frees its name): such grants are pruned, not inherited.
   */
  function grantCreator(principal: Principal, ref: ResourceRef, staleKinds: readonly ResourceRef['kind'][] = [ref.kind]): void {
    const pruned: ResourceRef[] = [];
    deps.db.transaction(() => {
      for (const kind of staleKinds) {
        const stale = deps.grants.deleteResource(kind, ref.id);
        if (stale === 0) continue;
        pruned.push({ kind, id: ref.id });
        deps.audit.record({ actor: principal.username, action: 'grant.prune-stale', target: `${kind}:${ref.id}`, oldValue: { grants: stale } });
      }
      const who = { type: 'user' as const, id: principal.userId };
      deps.grants.insert(who, ref.kind, ref.id, 'MANAGE');
      deps.audit.record({
        actor: principal.username,
        action: 'grant.creator',
        target: `${ref.kind}:${ref.id}/user:${principal.username}`,
        newValue: 'MANAGE',
      });
    })();
    deps.grantsChanged(ref, ...pruned);
  }

  function changeModelGrants(principal: Principal, name: string, newName: string | undefined): void {
    let changed = 0;
    deps.db.transaction(() => {
      for (const kind of ['registered_model', 'prompt'] as const)
        changed += newName === undefined ? deps.grants.deleteResource(kind, name) : deps.grants.moveResource(kind, name, newName);
      if (changed > 0)
        deps.audit.record({
          actor: principal.username,
          action: newName === undefined ? 'grant.drop-with-model' : 'grant.move-with-model',
          target: `registered_model:${name}`,
          newValue: newName,
          oldValue: { grants: changed },
        });
    })();
    deps.mappings.forget({ cache: 'model', key: name });
    if (newName !== undefined) deps.mappings.forget({ cache: 'model', key: newName });
    const names = newName === undefined ? [name] : [name, newName];
    deps.grantsChanged(...names.flatMap((id) => [{ kind: 'registered_model' as const, id }, { kind: 'prompt' as const, id }]));
  }

  const hookFailed = (hook: string) => (err: unknown) =>
    deps.logger.error({ hook, err: { message: (err as Error).message } }, 'after-response hook failed');

  async function afterWork(
    entry: RouteEntry,
    principal: Principal,
    request: ResolveRequest,
    refs: readonly ResourceRef[],
    r: GateRequest,
  ): Promise<Partial<GatePass>> {
    const hook = entry.after;
    if (hook === undefined) return {};
    switch (hook) {
      case 'grant_creator_experiment':
        return {
          onResponse: relayAfter((json) => {
            const id = obj(json).experiment_id;
            if (typeof id === 'string' && id) grantCreator(principal, { kind: 'experiment', id });
          }, hookFailed(hook)),
        };
      case 'grant_creator_registered_model': {
        const kind = refs.some((ref) => ref.kind === 'prompt') ? 'prompt' : 'registered_model';
        return {
          onResponse: relayAfter((json) => {
            const name = obj(obj(json).registered_model).name;
            if (typeof name === 'string' && name) {
              grantCreator(principal, { kind, id: name }, ['registered_model', 'prompt']);
              deps.mappings.forget({ cache: 'model', key: name });
            }
          }, hookFailed(hook)),
        };
      }
      case 'drop_registered_model_grants':
      case 'move_registered_model_grants': {
        const [name] = request.query.getAll('name').concat(typeof obj(request.body).name === 'string' ? [obj(request.body).name as string] : []);
        const newName = obj(request.body).new_name;
        if (typeof name !== 'string') return {};
        return {
          onResponse: relayAfter(
            () => changeModelGrants(principal, name, hook === 'move_registered_model_grants' && typeof newName === 'string' ? newName : undefined),
            hookFailed(hook),
          ),
        };
      }
      case 'forget_experiment_names':
        // The old name is not in the request: every cached name is forgotten (renames are rare).
        deps.lookups.invalidateExperimentNames();
        return { onResponse: relayAfter(() => deps.mappings.forget({ cache: 'experiment_names', key: '' }), hookFailed(hook)) };
      case 'forget_prompt_flag': {
        const [name] = readField(entry.id, request);
        if (name === undefined) return {};
        deps.lookups.invalidateModel(name);
        return { onResponse: relayAfter(() => deps.mappings.forget({ cache: 'model', key: name }), hookFailed(hook)) };
      }
      case 'forget_written_traces': {
        const written = (entry.also ?? []).filter((a) => a.clientChosen).flatMap((a) => readField(a.id, request));
        written.forEach((id) => deps.lookups.invalidateTrace(id));
        return { onResponse: relayAfter(() => written.forEach((key) => deps.mappings.forget({ cache: 'trace', key })), hookFailed(hook)) };
      }
      case 'filter_found_datasets': {
        delete r.req.headers['accept-encoding'];
        const readableDataset = async (dataset: unknown): Promise<boolean> => {
          const id = obj(dataset).dataset_id;
          if (typeof id !== 'string' || id === '') return false;
          try {
            const experiments = await deps.lookups.experimentsOfDataset(id);
            return canRead(principal, experiments.map((e) => ({ kind: 'experiment' as const, id: e })));
          } catch {
            return false;
          }
        };
        return {
          onResponse: rewriteJsonAnswer(
            async (json) => {
              const page = obj(json);
              if (!Array.isArray(page.datasets)) return;
              const keep = await Promise.all(page.datasets.map(readableDataset));
              page.datasets = page.datasets.filter((_, i) => keep[i]);
            },
            REWRITTEN_ANSWER_MAX_BYTES,
            hookFailed(hook),
          ),
        };
      }
      case 'forget_dataset_experiments': {
        const datasetId = request.params.dataset_id;
        if (datasetId === undefined) return {};
        // Forgotten now and again once MLflow has answered, so no look-up racing the change keeps the old list.
        deps.lookups.invalidateDataset(datasetId);
        return { onResponse: relayAfter(() => deps.mappings.forget({ cache: 'dataset', key: datasetId }), hookFailed(hook)) };
      }
      case 'forget_review_queue': {
        const queueId = readField(entry.id, request)[0];
        if (queueId === undefined) return {};
        deps.lookups.invalidateReviewQueue(queueId);
        return { onResponse: relayAfter(() => deps.mappings.forget({ cache: 'review_queue', key: queueId }), hookFailed(hook)) };
      }
      case 'filter_review_queues': {
        // MLflow's rule: EDIT on the experiment lists every queue; READ only the queues one is assigned to.
        if (principal.isAdmin || decideFor(principal, 'edit', refs).allow) return {};
        const me = principal.username.trim().toLowerCase();
        delete r.req.headers['accept-encoding'];
        return {
          onResponse: rewriteJsonAnswer(
            async (json) => {
              const page = obj(json);
              if (!Array.isArray(page.review_queues)) return;
              page.review_queues = page.review_queues.filter((q) => {
                const users = obj(q).users;
                return Array.isArray(users) && users.includes(me);
              });
            },
            REWRITTEN_ANSWER_MAX_BYTES,
            hookFailed(hook),
          ),
        };
      }
      case 'stamp_review_completed_by': {
        // MLflow binds `completed_by` to the caller only when its own auth plugin runs; behind
        // flowgate it would take the client's value, so one reviewer could sign as another.
        // MLflow reads protobuf JSON, so `completedBy` is the same field: every spelling goes.
        const body = { ...obj(request.body) };
        for (const name of spellings('completed_by')) delete body[name];
        if (body.status !== 'PENDING' && body.status !== 1) body.completed_by = principal.username;
        return { body: Buffer.from(JSON.stringify(body)) };
      }
      case 'filter_search_runs':
      case 'filter_search_traces': {
        if (principal.isAdmin) return {};
        const where = experimentList(entry);
        const listed = listedExperiments(where, request.body, request.query);
        const keep = new Set(listed.filter((id) => canRead(principal, [{ kind: 'experiment', id }])));
        if (keep.size === 0) return { respond: (res: ServerResponse) => Promise.resolve(sendJson(res, 200, {})) };
        return narrowedRequest(where, request.body, request.query, keep);
      }
      case 'filter_search_experiments':
      case 'filter_search_registered_models':
      case 'filter_search_model_versions':
      case 'filter_search_logged_models': {
        if (principal.isAdmin) return {};
        const kind = SEARCH_KINDS[hook]!;
        const method = r.method === 'GET' ? 'GET' : 'POST';
        const input: Record<string, unknown> =
          method === 'GET'
            ? Object.fromEntries([...new Set(request.query.keys())].map((k) => {
                const all = request.query.getAll(k);
                return [k, all.length > 1 ? all : all[0]];
              }))
            : { ...obj(request.body) };
        if (hook === 'filter_search_logged_models' && Array.isArray(input.experiment_ids)) {
          input.experiment_ids = input.experiment_ids.filter((id) => canRead(principal, [{ kind: 'experiment', id: String(id) }]));
          if ((input.experiment_ids as unknown[]).length === 0) return { respond: (res) => Promise.resolve(sendJson(res, 200, {})) };
        }
        const isPrompt = (name: string) => deps.lookups.isPrompt(name);
        // An item whose resources or permission cannot be told is not shown.
        const mayRead = (refs: ResourceRef[]) => {
          try {
            return canRead(principal, refs);
          } catch {
            return false;
          }
        };
        const readable = (items: readonly unknown[]): boolean[] | Promise<boolean[]> => {
          const verdicts: Array<boolean | Promise<boolean>> = [];
          let waiting = false;
          for (const item of items) {
            let refs: ResourceRef[] | Promise<ResourceRef[]>;
            try {
              refs = kind.refsOf(item, isPrompt);
            } catch {
              refs = [];
            }
            if (refs instanceof Promise) {
              waiting = true;
              verdicts.push(refs.then(mayRead, () => false));
            } else verdicts.push(mayRead(refs));
          }
          return waiting ? Promise.all(verdicts) : (verdicts as boolean[]);
        };
        return {
          respond: async (res, context) => {
            const { status, json, raw } = await filteredSearch(kind, deps.upstream, deps.pageTokens, {
              method,
              path: entry.pattern,
              input,
              username: principal.username,
              readable,
              context,
            });
            if (raw) sendJsonText(res, status, raw);
            else sendJson(res, status, json);
          },
        };
      }
      case 'graphql': {
        if (principal.isAdmin) return {};
        const { planGraphql, resolveGraphqlChecks, filterModelVersions } = await loadGraphqlPolicy();
        const plan = planGraphql(r.method, request.query, request.body);
        const check = (field: GraphqlFieldDecision) => {
          const decision = decideFor(principal, field.need, field.refs);
          if (r.notes) r.notes.reason = decision.reason;
          if (!decision.allow && field.need === 'admin')
            throw denied(principal, `use GraphQL field '${field.field}' (administrators only)`, [], decision);
          if (!decision.allow) throw denied(principal, field.need, field.refs, decision, ` (GraphQL field '${field.field}')`);
        };
        // Fields that need no look-up are decided first: a refused document costs MLflow nothing.
        for (const field of plan.checks) if (!field.twin) check({ ...field, refs: [] });
        for (const field of await resolveGraphqlChecks(plan, deps.resolve)) check(field);
        if (plan.modelVersionLists.length === 0) return {};
        const canReadModel = async (name: string) =>
          canRead(principal, [{ kind: (await deps.lookups.isPrompt(name)) ? 'prompt' : 'registered_model', id: name }]);
        // The answer is rewritten, so it must come back as plain JSON.
        delete r.req.headers['accept-encoding'];
        return {
          onResponse: rewriteJsonAnswer((json) => filterModelVersions(json, plan.modelVersionLists, canReadModel), REWRITTEN_ANSWER_MAX_BYTES, hookFailed(hook)),
        };
      }
    }
  }

  return {
    authorize(r: GateRequest): GatePass | Promise<GatePass> {
      const notes: GateNotes = r.notes ?? {};
      const m = deps.matcher.match(r.method, r.path);
      if (!m) {
        notes.route = 'unmatched';
        if (!r.principal) throw unauthenticated();
        if (r.principal.isAdmin) return { routeTemplate: 'unmatched', reason: 'admin' };
        notes.reason = 'route-not-found';
        throw forbidden(`Permission denied: ${r.method} ${r.path} is not an MLflow route flowgate knows`, 'route-not-found');
      }
      const { entry, params } = m;
      notes.route = entry.pattern;
      notes.resourceType = entry.resource === 'model_or_prompt' ? 'registered_model' : entry.resource;
      if (entry.need === 'public') return { routeTemplate: entry.pattern, reason: 'public-route' };
      const principal = r.principal;
      if (!principal) throw unauthenticated();
      const readsBody = needsBody(r.method, entry, principal.isAdmin);
      // Nothing to read, resolve or arrange afterwards (an administrator's ordinary call): decided
      // here and now, without a promise.
      if (!readsBody && !hookApplies(entry, principal) && !hasMoreChecks(entry, principal)) {
        if (!resolveNeeded(entry, principal)) return { routeTemplate: entry.pattern, reason: decideOrDeny(principal, entry.need, [], notes).reason };
        // A resource named in the path or query, or a run whose experiment is cached: decided here
        // and now as well.
        const request = resolveRequest(r, params, undefined);
        const refs = deps.resolve(entry, request);
        if (!(refs instanceof Promise)) return { routeTemplate: entry.pattern, reason: decideOnRefs(principal, entry.need, refs, notes).reason };
        return authorizeFully(r, entry, params, principal, notes, false, { request, refs });
      }
      return authorizeFully(r, entry, params, principal, notes, readsBody);
    },
  };

  function resolveRequest(r: GateRequest, params: Record<string, string>, body: unknown, raw?: Buffer): ResolveRequest {
    return { method: r.method, query: new URLSearchParams(r.search), body, params, headers: r.req.headers, raw };
  }

  /** The body as MLflow reads it: OTLP exports are protobuf or OTLP JSON, every other body MLflow's JSON. */
  function bodyRequest(r: GateRequest, params: Record<string, string>, entry: RouteEntry, raw: Buffer | undefined): ResolveRequest {
    if (raw === undefined) return resolveRequest(r, params, undefined);
    if (entry.also?.some((a) => a.id.kind === 'otlp_trace_ids')) return resolveRequest(r, params, undefined, raw);
    return resolveRequest(r, params, readMlflowJson(raw));
  }

  /** The decision on the resources the request resolved to (the first one names the resource type). */
  function decideOnRefs(principal: Principal, need: RouteEntry['need'], refs: readonly ResourceRef[], notes: GateNotes): Decision {
    if (refs[0]) notes.resourceType = refs[0].kind;
    return decideOrDeny(principal, need, refs, notes);
  }

  /** The decision on `refs`, noted for logs and metrics; a refusal is thrown. */
  function decideOrDeny(
    principal: Principal,
    need: Need,
    refs: readonly ResourceRef[],
    notes: GateNotes,
    context = '',
  ): Decision {
    const decision = decideFor(principal, need, refs);
    notes.reason = decision.reason;
    if (!decision.allow) throw denied(principal, need, refs, decision, context);
    return decision;
  }

  /** A refusal that is not a grant decision (a guarded field, a moved object): its reason is noted too. */
  function refuse(notes: GateNotes, reason: string, message: string): never {
    notes.reason = reason;
    throw forbidden(message, reason);
  }

  /** A further id the request carries: each one's resources need `also.need` as well. */
  async function checkAlso(principal: Principal, entry: RouteEntry, also: AlsoCheck, request: ResolveRequest, main: readonly ResourceRef[], notes: GateNotes) {
    if (also.clientChosen) {
      const existing = await deps.resolveExisting(also.id, request);
      // An existing object may only be written where it already lives: never moved into the request's experiment.
      const elsewhere = existing.find((ref) => !main.some((m) => m.kind === ref.kind && m.id === ref.id));
      if (elsewhere)
        refuse(notes, 'object-in-other-experiment', `Permission denied: the request names an existing object of experiment '${elsewhere.id}', not of the experiment it writes to`);
      if (existing.length > 0) decideOrDeny(principal, also.need, existing, notes);
      return;
    }
    if (readField(also.id, request).length === 0) return;
    const more = await deps.resolve({ ...entry, resource: also.resource ?? 'experiment', id: also.id, need: also.need }, request);
    decideOrDeny(principal, also.need, more, notes);
  }

  async function authorizeFully(
    r: GateRequest,
    entry: RouteEntry,
    params: Record<string, string>,
    principal: Principal,
    notes: GateNotes,
    readsBody: boolean,
    /** The request (no body) and its resources, when the caller already started resolving them. */
    started?: { request: ResolveRequest; refs: Promise<ResourceRef[]> },
  ): Promise<GatePass> {
    const raw = readsBody ? await readBody(r.req, deps.maxBodyBytes) : undefined;
    const request = started?.request ?? bodyRequest(r, params, entry, raw);
    const refs = started ? await started.refs : resolveNeeded(entry, principal) ? await deps.resolve(entry, request) : [];
    const decision = decideOnRefs(principal, entry.need, refs, notes);
    if (!principal.isAdmin) {
      for (const guard of entry.guards ?? []) {
        const field = guardedField(guard, request);
        if (field !== undefined)
          refuse(notes, 'reserved-field', `Permission denied: only administrators may set ${field === guard.field ? `'${field}'` : field} here`);
      }
      for (const also of entry.also ?? []) await checkAlso(principal, entry, also, request, refs, notes);
    }
    // The main decision's reason stands unless a further check refused.
    notes.reason = decision.reason;
    let lookedUp: ReviewQueueByName['answer'] | undefined;
    if (entry.queueRule && !principal.isAdmin) {
      const byId = entry.id.kind === 'owned_id';
      const queue = readField(byId ? entry.id : REVIEW_QUEUE_NAME, request)[0];
      const experiment = refs[0];
      const permission = decision.permission;
      if (!byId && !queue) throw badRequest("Missing value for required parameter 'name'");
      // Allowed with a resolved experiment always carries these; anything else is refused.
      if (!queue || !experiment || !permission) throw denied(principal, entry.need, refs, decision);
      const found = byId ? undefined : await deps.lookups.reviewQueueByName(experiment.id, queue);
      const users = found ? found.users : await deps.lookups.reviewQueueUsers(queue);
      if (!queueRuleAllows(entry.queueRule, permission, users, principal.username)) {
        notes.reason = 'not-queue-member';
        throw forbidden(
          `Permission denied: ${principal.username} is not assigned to review queue '${queue}'` +
            (entry.queueRule === 'member_or_manage' ? ' and may not manage its experiment' : ''),
          'not-queue-member',
        );
      }
      lookedUp = found?.answer;
    }
    if (entry.alsoReads === 'model_version_source' && !principal.isAdmin) {
      const sources = await modelVersionSourceRefs(request.body, deps.lookups);
      if (sources.length > 0) decideOrDeny(principal, 'read', sources, notes, ' (the model version source)');
      notes.reason = decision.reason;
    }
    const pass: GatePass = { routeTemplate: entry.pattern, reason: decision.reason, body: raw };
    // A hook may replace the body it read (review stamping) or take over the answer.
    if (hookApplies(entry, principal)) return { ...pass, ...(await afterWork(entry, principal, request, refs, r)) };
    // The look-up asked MLflow exactly what the caller asks: answer with it instead of asking twice.
    return lookedUp?.raw ? { ...pass, respond: relayLookedUp(lookedUp.status, lookedUp.raw, lookedUp.seconds) } : pass;
  }
}
