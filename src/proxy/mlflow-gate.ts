import type { JobOwners } from '../jobs/job-owners.js';
import type { WorkspaceStanding } from '../workspaces/standing.js';
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
import type { GatePass, GateRequest, MlflowGate } from './gate.js';
import { HOOKS } from './hooks/index.js';
import type { HookContext } from './hooks/types.js';
import { readMlflowJson } from './mlflow-json.js';
import type { DecisionScope } from './request-scope.js';
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
  /** Who started each MLflow job. */
  readonly jobStarters: JobOwners;
  /** False in shadow mode (FLOWGATE_ENFORCE=false): refusals are noted as would-deny and the request goes on. */
  readonly enforcing?: boolean;
  /** Counts an after-hook that failed once MLflow had answered. */
  readonly onHookFailure?: (hook: string) => void;
  /** Callers' standing in MLflow's workspaces. */
  readonly workspaces?: WorkspaceStanding;
}

/** The pass of a request forwarded as it came. */
const FORWARD: GatePass = Object.freeze({});

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
    jobStarters: deps.jobStarters,
    logger: deps.logger,
    onHookFailure: deps.onHookFailure,
    workspaces: deps.workspaces,
  };

  const enforcing = deps.enforcing ?? true;

  /** The verdict's reason goes on the scope at once; a refusal becomes the one 403 the caller sees, unless shadowed. */
  function enforce(verdict: Verdict, scope: DecisionScope): Verdict {
    scope.reason = verdict.reason;
    if (verdict.allow || !enforcing) return verdict;
    throw forbidden(verdict.message ?? 'Permission denied', verdict.reason);
  }

  /** The request passes on this verdict (enforced): allowed, or a refusal shadow mode lets through. */
  function passed(verdict: Verdict, scope: DecisionScope): void {
    scope.decision = verdict.allow ? 'allow' : 'would_deny';
  }

  /** The pass for a main-check verdict: a promise only when an experiment's name had to be looked up. */
  function passOf(verdict: Verdict | Promise<Verdict>, scope: DecisionScope): GatePass | Promise<GatePass> {
    if (verdict instanceof Promise)
      return verdict.then((v) => {
        passed(enforce(v, scope), scope);
        return FORWARD;
      });
    passed(enforce(verdict, scope), scope);
    return FORWARD;
  }

  function noteResources(refs: readonly ResourceRef[], scope: DecisionScope): void {
    if (refs[0]) scope.resourceType = refs[0].kind;
    scope.resources = refs;
  }

  function requestOf(r: GateRequest, params: Record<string, string>, plan: RoutePlan, raw: Buffer | undefined): ResolveRequest {
    // OTLP exports are protobuf or OTLP JSON; every other body is read as MLflow reads JSON.
    const otlp = raw !== undefined && plan.bodyFormat === 'otlp';
    const body = raw === undefined || otlp ? undefined : readMlflowJson(raw);
    // Written out rather than spread: see test/unit/request-path-spreads.test.ts.
    return { method: r.method, query: new URLSearchParams(r.search), params, headers: r.req.headers, body, raw: otlp ? raw : undefined };
  }

  async function decideFully(
    r: GateRequest,
    entry: RouteEntry,
    params: Record<string, string>,
    principal: Principal,
    plan: RoutePlan,
    caller: CallerPlan,
    scope: DecisionScope,
    /** The request (no body) and its resources, when the caller already started resolving them. */
    started?: { request: ResolveRequest; refs: Promise<ResourceRef[]> },
  ): Promise<GatePass> {
    const raw = caller.readsBody ? await readBody(r.req, deps.maxBodyBytes) : undefined;
    if (plan.bodyFormat === 'otlp') await loadOtlpReader();
    const request = started?.request ?? requestOf(r, params, plan, raw);
    const trace = scope.trace;
    const refs = started ? await started.refs : caller.resolves ? await (trace ? trace.stage('resolve', () => deps.resolve(entry, request)) : deps.resolve(entry, request)) : [];
    noteResources(refs, scope);
    const input = { principal, entry, request, refs };
    const verdict = enforce(await (trace ? trace.stage('evaluate', () => deps.evaluator.evaluate(input)) : deps.evaluator.evaluate(input)), scope);
    // A hook may replace the body it read (review stamping) or take over the answer. A shadowed
    // refusal keeps the bookkeeping hooks (creator grants, forgotten mappings) but reaches MLflow's
    // answer unfiltered, as it would without flowgate. The request has passed once its hook has.
    if (caller.hook !== undefined && (verdict.allow || HOOKS[caller.hook].for === 'everyone')) {
      const hook = caller.hook;
      const hookInput = { hook, entry, principal, request, refs, verdict, req: r.req };
      const arranged = await (trace ? trace.stage('prepare-after-hook', () => HOOKS[hook].run(hookInput, hookContext)) : HOOKS[hook].run(hookInput, hookContext));
      passed(verdict, scope);
      return Object.assign({ body: raw }, arranged);
    }
    passed(verdict, scope);
    // The look-up asked MLflow exactly what the caller asks: answer with it instead of asking twice.
    return verdict.lookedUp?.raw ? { body: raw, respond: relayLookedUp(verdict.lookedUp) } : { body: raw };
  }

  return {
    authorize(r: GateRequest): GatePass | Promise<GatePass> {
      const scope = r.scope;
      const m = deps.matcher.match(r.method, r.path);
      if (!m) {
        scope.route = 'unmatched';
        scope.resourceType = 'none';
        if (!r.principal) throw unauthenticated();
        if (r.principal.isAdmin) {
          scope.reason = 'admin';
          scope.decision = 'allow';
          return FORWARD;
        }
        scope.reason = 'route-not-found';
        if (!enforcing) {
          scope.decision = 'would_deny';
          return FORWARD;
        }
        throw forbidden(`Permission denied: ${r.method} ${r.path} is not an MLflow route flowgate knows`, 'route-not-found');
      }
      const { entry, params } = m;
      scope.route = entry.pattern;
      scope.resourceType = entry.resource === 'model_or_prompt' ? modelKind(false) : entry.resource;
      if (entry.need === 'public') {
        scope.reason = 'public-route';
        scope.decision = 'allow';
        return FORWARD;
      }
      const principal = r.principal;
      if (!principal) throw unauthenticated();
      const plan = planOf(entry);
      const caller = principal.isAdmin ? plan.admin : plan.user;
      if (!caller.immediate) return decideFully(r, entry, params, principal, plan, caller, scope);
      // Nothing to read or arrange afterwards (an administrator's ordinary call, a resource named in
      // the path or query, a run whose experiment is cached): decided here and now, without a promise.
      const trace = scope.trace;
      if (!caller.resolves) return passOf(trace ? trace.stage('evaluate', () => deps.evaluator.main(principal, entry, [])) : deps.evaluator.main(principal, entry, []), scope);
      const request = requestOf(r, params, plan, undefined);
      const refs = trace ? trace.stage('resolve', () => deps.resolve(entry, request)) : deps.resolve(entry, request);
      if (refs instanceof Promise) return decideFully(r, entry, params, principal, plan, caller, scope, { request, refs });
      noteResources(refs, scope);
      return passOf(trace ? trace.stage('evaluate', () => deps.evaluator.main(principal, entry, refs)) : deps.evaluator.main(principal, entry, refs), scope);
    },
  };
}
