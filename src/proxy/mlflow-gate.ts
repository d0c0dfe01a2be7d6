import type { Evaluator, Verdict } from '../authz/evaluate.js';
import type { GrantWriter } from '../authz/grant-writer.js';
import type { MappingForgetter } from '../authz/mapping-forgetter.js';
import type { CachedMlflowLookups } from '../authz/mlflow-lookups.js';
import { loadOtlpReader, type ResourceResolver, type ResolveRequest } from '../authz/resolve.js';
import type { RouteMatcher } from '../authz/route-matcher.js';
import type { ResourceRef, RouteEntry } from '../authz/types.js';
import { forbidden, sendJsonText, unauthenticated } from '../errors.js';
import type { Logger } from '../logging.js';
import type { Principal } from '../principals/types.js';
import { modelKind } from '../resources/kinds.js';
import type { UpstreamJson } from '../upstream/json-client.js';
import type { PageTokenSealer } from './after/page-token-sealer.js';
import { readBody } from '../http/body.js';
import type { GateNotes, GatePass, GateRequest, MlflowGate } from './gate.js';
import { HOOKS } from './hooks/index.js';
import type { HookContext } from './hooks/types.js';
import { readMlflowJson } from './mlflow-json.js';
import { compileRoutePlans, type CallerPlan, type RoutePlan } from './route-plan.js';

export interface MlflowGateDeps {
  readonly matcher: RouteMatcher;
  readonly catalog: readonly RouteEntry[];
  readonly resolve: ResourceResolver;
  readonly evaluator: Evaluator;
  readonly lookups: CachedMlflowLookups;
  /** Forgets a changed mapping here and in every flowgate on the store (after MLflow made the change). */
  readonly mappings: MappingForgetter;
  readonly grantWriter: GrantWriter;
  readonly upstream: UpstreamJson;
  readonly maxBodyBytes: number;
  readonly logger: Logger;
  /** Seals the page tokens of filtered searches. */
  readonly pageTokens: PageTokenSealer;
  /** False in shadow mode (FLOWGATE_ENFORCE=false): refusals are noted as would-deny and the request goes on. */
  readonly enforcing?: boolean;
  /** Counts an after-hook that failed once MLflow had answered. */
  readonly onHookFailure?: (hook: string) => void;
}

/** Answers the caller with MLflow's answer to the look-up that decided the request (the same call). */
function relayLookedUp(answer: NonNullable<Verdict['lookedUp']>): NonNullable<GatePass['respond']> {
  return (res, context) => {
    context.onUpstream?.(answer.status, answer.seconds);
    sendJsonText(res, answer.status, answer.raw!);
    return Promise.resolve();
  };
}

/**
 * The enforcement gate, in stages: match the catalog row (and its plan, compiled at start) →
 * read the body if the plan says so → resolve the row's resources → evaluate every check → arrange
 * the after-hook. Anything it cannot classify or resolve is denied (or answered 4xx/5xx).
 */
export function createMlflowGate(deps: MlflowGateDeps): MlflowGate {
  const planOf = compileRoutePlans(deps.catalog);
  const hookContext: HookContext = {
    evaluator: deps.evaluator,
    grantWriter: deps.grantWriter,
    lookups: deps.lookups,
    mappings: deps.mappings,
    upstream: deps.upstream,
    pageTokens: deps.pageTokens,
    logger: deps.logger,
    onHookFailure: deps.onHookFailure,
  };

  const enforcing = deps.enforcing ?? true;

  /** The verdict noted for logs and metrics; a refusal becomes the one 403 the caller sees, unless shadowed. */
  function enforce(verdict: Verdict, notes: GateNotes): Verdict {
    notes.reason = verdict.reason;
    if (verdict.allow) return verdict;
    if (!enforcing) {
      notes.wouldDeny = true;
      return verdict;
    }
    throw forbidden(verdict.message ?? 'Permission denied', verdict.reason);
  }

  /** The pass for a main-check verdict: a promise only when an experiment's name had to be looked up. */
  function passOf(entry: RouteEntry, verdict: Verdict | Promise<Verdict>, notes: GateNotes): GatePass | Promise<GatePass> {
    if (verdict instanceof Promise) return verdict.then((v) => ({ routeTemplate: entry.pattern, reason: enforce(v, notes).reason }));
    return { routeTemplate: entry.pattern, reason: enforce(verdict, notes).reason };
  }

  function noteResources(refs: readonly ResourceRef[], notes: GateNotes): void {
    if (refs[0]) notes.resourceType = refs[0].kind;
  }

  function requestOf(r: GateRequest, params: Record<string, string>, plan: RoutePlan, raw: Buffer | undefined): ResolveRequest {
    const base = { method: r.method, query: new URLSearchParams(r.search), params, headers: r.req.headers };
    if (raw === undefined) return { ...base, body: undefined };
    // OTLP exports are protobuf or OTLP JSON; every other body is read as MLflow reads JSON.
    return plan.bodyFormat === 'otlp' ? { ...base, body: undefined, raw } : { ...base, body: readMlflowJson(raw) };
  }

  async function decideFully(
    r: GateRequest,
    entry: RouteEntry,
    params: Record<string, string>,
    principal: Principal,
    plan: RoutePlan,
    caller: CallerPlan,
    notes: GateNotes,
    /** The request (no body) and its resources, when the caller already started resolving them. */
    started?: { request: ResolveRequest; refs: Promise<ResourceRef[]> },
  ): Promise<GatePass> {
    const raw = caller.readsBody ? await readBody(r.req, deps.maxBodyBytes) : undefined;
    if (plan.bodyFormat === 'otlp') await loadOtlpReader();
    const request = started?.request ?? requestOf(r, params, plan, raw);
    const refs = started ? await started.refs : caller.resolves ? await deps.resolve(entry, request) : [];
    noteResources(refs, notes);
    const verdict = enforce(await deps.evaluator.evaluate({ principal, entry, request, refs }), notes);
    const pass: GatePass = { routeTemplate: entry.pattern, reason: verdict.reason, body: raw };
    // A hook may replace the body it read (review stamping) or take over the answer. A shadowed
    // refusal keeps the bookkeeping hooks (creator grants, forgotten mappings) but reaches MLflow's
    // answer unfiltered, as it would without flowgate.
    if (caller.hook !== undefined && (verdict.allow || HOOKS[caller.hook].for === 'everyone')) {
      const hook = caller.hook;
      return { ...pass, ...(await HOOKS[hook].run({ hook, entry, principal, request, refs, verdict, req: r.req }, hookContext)) };
    }
    // The look-up asked MLflow exactly what the caller asks: answer with it instead of asking twice.
    return verdict.lookedUp?.raw ? { ...pass, respond: relayLookedUp(verdict.lookedUp) } : pass;
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
        if (!enforcing) {
          notes.wouldDeny = true;
          return { routeTemplate: 'unmatched', reason: 'route-not-found' };
        }
        throw forbidden(`Permission denied: ${r.method} ${r.path} is not an MLflow route flowgate knows`, 'route-not-found');
      }
      const { entry, params } = m;
      notes.route = entry.pattern;
      notes.resourceType = entry.resource === 'model_or_prompt' ? modelKind(false) : entry.resource;
      if (entry.need === 'public') return { routeTemplate: entry.pattern, reason: 'public-route' };
      const principal = r.principal;
      if (!principal) throw unauthenticated();
      const plan = planOf(entry);
      const caller = principal.isAdmin ? plan.admin : plan.user;
      if (!caller.immediate) return decideFully(r, entry, params, principal, plan, caller, notes);
      // Nothing to read or arrange afterwards (an administrator's ordinary call, a resource named in
      // the path or query, a run whose experiment is cached): decided here and now, without a promise.
      if (!caller.resolves) return passOf(entry, deps.evaluator.main(principal, entry, []), notes);
      const request = requestOf(r, params, plan, undefined);
      const refs = deps.resolve(entry, request);
      if (refs instanceof Promise) return decideFully(r, entry, params, principal, plan, caller, notes, { request, refs });
      noteResources(refs, notes);
      return passOf(entry, deps.evaluator.main(principal, entry, refs), notes);
    },
  };
}
