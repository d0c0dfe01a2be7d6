import type { Principal } from '../principals/types.js';
import { EXPERIMENT, hasNumericId, knownName, MODEL_KINDS, WORKSPACE } from '../resources/kinds.js';
import type { WorkspaceStanding } from '../workspaces/standing.js';
import { artifactPrefixWorkspace } from '../workspaces/artifact-paths.js';
import type { WorkspaceMode } from '../workspaces/workspace-mode.js';
import { isResourceNeed } from '../resources/permissions.js';
import type { Reason } from '../resources/reasons.js';
import { badRequest, FlowgateError } from '../errors.js';
import { decide, type Decision } from './decide.js';
import { guardedField, isPromptFlagKey } from './field-guards.js';
import type { GraphqlPlan } from './graphql-policy.js';
import type { CachedMlflowLookups, ReviewQueueByName } from './mlflow-lookups.js';
import { modelVersionSourceRefs } from './model-source.js';
import type { PolicyReader } from './policy.js';
import type { JobOwners } from '../jobs/job-owners.js';
import { queueRuleAllows } from './queue-rule.js';
import { bodyLeavesOf, isMissingRef, readField, type ExistingResolver, type ResourceResolver, type ResolveRequest } from './resolve.js';
import { routeChecks, type CheckName } from './route-checks.js';
import type { AlsoCheck, FieldGuard, IdSource, Need, Permission, QueueRule, ResourceRef, RouteEntry } from './types.js';

export type { CheckName } from './route-checks.js';

export interface CheckOutcome {
  readonly check: CheckName;
  readonly allow: boolean;
  /** A decision reason (`group-grant`, `default-permission`, …) or the check's own (`reserved-field`, …). */
  readonly reason: Reason;
}

export interface Verdict {
  readonly allow: boolean;
  /** The deciding check's reason: the first refusal's, else the main check's. */
  readonly reason: Reason;
  readonly checks: readonly CheckOutcome[];
  /** For a refusal: what the caller is told (no secrets: names and ids it sent). */
  readonly message?: string;
  /** The caller's effective permission on the route's resources, when the main check found one. */
  readonly permission?: Permission;
  /** MLflow's answer to a queue look-up that asked exactly what the caller asks. */
  readonly lookedUp?: ReviewQueueByName['answer'];
  /** The GraphQL document's plan (its answer may need filtering). */
  readonly graphql?: GraphqlPlan;
}

export interface EvaluationInput {
  readonly principal: Principal;
  readonly entry: RouteEntry;
  readonly request: ResolveRequest;
  /** The route's own resources, resolved (empty when the decision needs none). */
  readonly refs: readonly ResourceRef[];
}

export interface EvaluatorDeps {
  readonly policy: PolicyReader;
  readonly defaultPermission: Permission;
  readonly createRequiresAdmin: boolean;
  readonly resolve: ResourceResolver;
  readonly resolveExisting: ExistingResolver;
  readonly lookups: CachedMlflowLookups;
  /** Who started each MLflow job (flowgate's own record). */
  readonly jobStarters: Pick<JobOwners, 'ownerOf'>;
  /** The caller's standing in MLflow's workspaces (absent: decided as without workspaces). */
  readonly workspaces?: WorkspaceStanding;
  /** Whether MLflow runs with workspaces (absent: without), for the artifact paths a model version's source names. */
  readonly workspaceMode?: Pick<WorkspaceMode, 'enabled'>;
}

/** A queue opened by name: read like any id, so a second, different copy is a 400 rather than a choice. */
const REVIEW_QUEUE_NAME: IdSource = { kind: 'owned_id', owner: 'review_queue', field: 'name', from: 'auto' };

/** The GraphQL parser is loaded on the first GraphQL request: most deployments' programs never send one. */
let graphqlPolicy: Promise<typeof import('./graphql-policy.js')> | undefined;
const loadGraphqlPolicy = () => (graphqlPolicy ??= import('./graphql-policy.js'));

const describe = (refs: readonly ResourceRef[]) =>
  refs.length ? ` on ${refs.map((ref) => `${ref.kind.replace('_', ' ')} '${ref.id}'`).join(', ')}` : '';

/**
 * What a refusal says it is about: only what the caller sent. An experiment reached through a run,
 * trace, name or other id is not named (its id would tell more than MLflow tells), and a model named
 * by the caller is not called a prompt or a model (its prompt flag is the hidden model's own).
 */
function describeSent(id: IdSource, refs: readonly ResourceRef[]): string {
  if (refs.length === 0) return '';
  // A scorer is named by the experiment and the name the caller sent.
  if (id.kind === 'experiment_id' || id.kind === 'experiment_ids' || id.kind === 'scorer') return describe(refs);
  if (id.kind === 'registered_scorers' && id.yields === 'scorers') return describe(refs);
  // A name decided as both kinds (one MLflow does not have) is named once, as a hidden one is.
  if (id.kind === 'model_name' || id.kind === 'model_names') return ` on ${[...new Set(refs.map((ref) => `'${ref.id}'`))].join(', ')}`;
  // Named after the endpoint name the caller sent, never by its id.
  if (id.kind === 'usage_experiment') return ` the experiment ${refs.map((ref) => `'${'name' in ref ? ref.name : ''}'`).join(', ')} the endpoint's usage traces go to`;
  // The name MLflow stores may be another spelling of the one sent: not shown.
  if (id.kind === 'gateway_name') return ' the gateway endpoint it names';
  // A Skill is named by the caller, by MLflow's one spelling of it.
  if (id.kind === 'skill' || id.kind === 'skills_registered') return describe(refs);
  // An MCP server is named by the caller's path, as MLflow keys it.
  if (id.kind === 'mcp_server') return describe(refs);
  return 'field' in id ? ` what its '${id.field}' belongs to` : '';
}

const isMissing = (e: unknown) => e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST';

class Refusal {
  constructor(
    readonly outcome: CheckOutcome,
    readonly message: string,
  ) {}
}

/**
 * One evaluation step for a request: the route's own check, then every further one the catalog row
 * declares (guarded fields, further ids, review-queue membership, a model version's source, GraphQL
 * fields). Deny wins; the verdict carries the deciding reason and every check made. Administrators
 * pass the further checks, as they pass the main one.
 */
export function createEvaluator(deps: EvaluatorDeps) {
  /** Decides on refs that carry every name the decision needs; a missing one is refused (503), never skipped. */
  function decideFor(principal: Principal, need: Need, refs: readonly ResourceRef[]): Decision {
    const resourceNeed = isResourceNeed(need);
    // A workspace itself is decided on its membership alone: no default permission reaches it (the
    // default workspace's open membership aside), and it is in no workspace of its own.
    const onWorkspaces = resourceNeed && refs.length > 0 && refs.every((ref) => ref.kind === WORKSPACE);
    const standing = principal.isAdmin || onWorkspaces ? undefined : deps.workspaces?.current(principal);
    return decide({
      isAdmin: principal.isAdmin,
      need,
      // Only resource needs read grants: the others are decided without them (and without names).
      facts: resourceNeed ? refs.map((ref) => deps.policy.factsFor(principal, ref)) : [],
      defaultPermission: onWorkspaces ? (deps.workspaces?.in(principal, refs[0]!.id).member ? 'USE' : 'NO_PERMISSIONS') : deps.defaultPermission,
      createRequiresAdmin: deps.createRequiresAdmin,
      ...(standing === undefined ? {} : { workspace: standing }),
    });
  }

  /**
   * The refs with the experiment names their decision needs: the same array, without a promise,
   * for a caller holding no experiment pattern grant (or when every name is cached). A look-up that
   * fails throws (MLflow's error JSON, 503 when MLflow did not answer): no decision without the patterns.
   */
  function named(principal: Principal, need: Need, refs: readonly ResourceRef[]): readonly ResourceRef[] | Promise<readonly ResourceRef[]> {
    if (principal.isAdmin || refs.length === 0 || !isResourceNeed(need) || !deps.policy.mayNeedExperimentNames(principal)) return refs;
    let waiting = false;
    const out = refs.map((ref): ResourceRef | Promise<ResourceRef> => {
      if (!hasNumericId(ref) || !deps.policy.needsName(principal, ref)) return ref;
      const known = deps.lookups.knownExperimentName(ref.id);
      if (known !== undefined) return Object.assign({}, ref, { name: known });
      waiting = true;
      // Fresh: an id remembered as missing may have been created since, and must not be decided without its patterns.
      return deps.lookups.experimentNameById(ref.id, true).then(
        (name) => Object.assign({}, ref, { name }),
        (e: unknown) => (isMissing(e) ? Object.assign({}, ref, { name: null }) : Promise.reject(e)),
      );
    });
    return waiting ? Promise.all(out) : (out as ResourceRef[]);
  }

  /** `decideFor` after the names it needs are known: synchronous whenever `named` is. */
  function decideNamed(principal: Principal, need: Need, refs: readonly ResourceRef[]): Decision | Promise<Decision> {
    const ready = named(principal, need, refs);
    return ready instanceof Promise ? ready.then((r) => decideFor(principal, need, r)) : decideFor(principal, need, ready);
  }

  /** `shown` is what the refusal may name: by default the refs, which the caller then sent themself. */
  async function granted(check: CheckName, principal: Principal, need: Need, refs: readonly ResourceRef[], context = '', shown = describe(refs)): Promise<CheckOutcome> {
    const decision = await decideNamed(principal, need, refs);
    const outcome = { check, allow: decision.allow, reason: decision.reason };
    if (!decision.allow) throw new Refusal(outcome, `Permission denied: ${principal.username} may not ${need}${shown}${context}`);
    return outcome;
  }

  const refuse = (check: CheckName, reason: Reason, message: string): never => {
    throw new Refusal({ check, allow: false, reason }, message);
  };

  /**
   * The route's own check alone: enough when the row declares nothing further. Synchronous unless
   * an experiment's name must be looked up for the caller's pattern grants.
   */
  function main(principal: Principal, entry: RouteEntry, refs: readonly ResourceRef[]): Verdict | Promise<Verdict> {
    const ready = named(principal, entry.need, refs);
    return ready instanceof Promise ? ready.then((r) => mainVerdict(principal, entry, r)) : mainVerdict(principal, entry, ready);
  }

  /**
   * A row that makes what is missing (a Skill's registration): `create` decides for the resources MLflow
   * does not have yet, `need` for the ones it has; both must allow.
   */
  function decideMaking(principal: Principal, entry: RouteEntry, refs: readonly ResourceRef[]): Decision {
    const existing = refs.filter((ref) => !isMissingRef(ref));
    if (existing.length === refs.length) return decideFor(principal, entry.need, refs);
    const creating = decideFor(principal, 'create', []);
    return !creating.allow || existing.length === 0 ? creating : decideFor(principal, entry.need, existing);
  }

  function mainVerdict(principal: Principal, entry: RouteEntry, refs: readonly ResourceRef[]): Verdict {
    const decision = entry.createsMissing ? decideMaking(principal, entry, refs) : decideFor(principal, entry.need, refs);
    const checks = [{ check: 'main' as const, allow: decision.allow, reason: decision.reason }];
    return decision.allow
      ? { allow: true, reason: decision.reason, checks, permission: decision.permission }
      : { allow: false, reason: decision.reason, checks, message: `Permission denied: ${principal.username} may not ${decision.reason === 'create-admin-only' ? 'create' : entry.need}${describeSent(entry.id, refs)}` };
  }

  /**
   * Since a name carries access once pattern grants exist, a rename (into a team's `team-a/*`, or out
   * of a `secret/*` deny) may hand access to others or take it away: MANAGE, like granting. Every
   * rename to another name needs it, whatever the new name: were it asked only of names that change
   * which patterns match, the refusal (or its explanation) would tell an editor or manager which names
   * other people's patterns cover. Keeping the name the resource has changes nothing and stays EDIT.
   *
   * Whether pattern grants of the resource's kind exist is read over every workspace: never narrower
   * than the patterns that could match, and the same for every new name.
   */
  async function rename(input: EvaluationInput, field: string): Promise<CheckOutcome | undefined> {
    const { principal, request, refs } = input;
    const ref = refs[0];
    if (ref === undefined || !deps.policy.patternGrantsOf(ref.kind)) return undefined;
    const to = bodyLeavesOf(request.body, field).filter((v): v is string => typeof v === 'string');
    if (to.length === 0) return undefined;
    // The caller renames what they may edit: its name is theirs to know, so comparing with it tells nothing.
    const from = knownName(ref) ?? (await deps.lookups.experimentNameById(ref.id, true));
    if (to.every((name) => name === from)) return undefined;
    return granted('rename', principal, 'manage', refs, ' (a rename needs MANAGE while name-pattern grants exist)');
  }

  /**
   * Setting or removing the prompt flag moves a registered model between model and prompt grants
   * (EDIT on the model plus a prompt pattern's MANAGE would become delete rights on it): MANAGE on
   * it as it is and as it will be, like a rename while pattern grants exist.
   */
  async function kindChange(input: EvaluationInput, field: string): Promise<CheckOutcome | undefined> {
    const { principal, request, refs } = input;
    const name = refs[0]?.id;
    if (name === undefined) return undefined;
    const keys = readField({ kind: 'model_name', field, from: 'auto' }, request);
    if (!keys.some(isPromptFlagKey)) return undefined;
    const sides: ResourceRef[] = MODEL_KINDS.map((kind) => ({ kind, id: name }));
    return granted('kind', principal, 'manage', sides, ' (the prompt flag moves it between model and prompt grants)', ` on '${name}'`);
  }

  async function also(input: EvaluationInput, check: AlsoCheck): Promise<CheckOutcome | undefined> {
    const { principal, entry, request, refs } = input;
    if (check.clientChosen) {
      const existing = await deps.resolveExisting(check.id, request);
      // An existing object may only be written where it already lives: never moved into the request's
      // experiment. (An endpoint's usage experiment is not moved anywhere: it is written to as it is.)
      // (Nor is a scorer, named within the request's experiment: registering adds a version to it.)
      const moves = check.id.kind !== 'usage_experiment' && check.id.kind !== 'scorer';
      const elsewhere = moves ? existing.find((ref) => !refs.some((m) => m.kind === ref.kind && m.id === ref.id)) : undefined;
      if (elsewhere)
        refuse('also', 'object-in-other-experiment', 'Permission denied: the request names an existing object of another experiment, not of the experiment it writes to');
      return existing.length > 0 ? await granted('also', principal, check.need, existing, '', describeSent(check.id, existing)) : undefined;
    }
    if (readField(check.id, request).length === 0) return undefined;
    const more = await deps.resolve(Object.assign({}, entry, { resource: check.resource ?? EXPERIMENT, id: check.id, need: check.need }), request);
    // Registered scorers whose stored judges call no gateway endpoint spend none; the scorers themselves
    // are always resolved, so an empty list there stays a refusal.
    if (more.length === 0 && check.id.kind === 'registered_scorers' && check.id.yields === 'judge_endpoints') return undefined;
    return await granted('also', principal, check.need, more, '', describeSent(check.id, more));
  }

  async function queue(input: EvaluationInput, rule: QueueRule, permission: Permission | undefined): Promise<{ outcome: CheckOutcome; lookedUp?: ReviewQueueByName['answer'] }> {
    const { principal, entry, request, refs } = input;
    const byId = entry.id.kind === 'owned_id';
    const queueName = readField(byId ? entry.id : REVIEW_QUEUE_NAME, request)[0];
    const experiment = refs[0];
    if (!byId && !queueName) throw badRequest("Missing value for required parameter 'name'");
    // Allowed with a resolved experiment always carries these; anything else is refused.
    if (!queueName || !experiment || !permission) return refuse('queue', 'default-permission', `Permission denied: ${principal.username} may not ${entry.need}${describeSent(entry.id, refs)}`);
    const found = byId ? undefined : await deps.lookups.reviewQueueByName(experiment.id, queueName);
    const users = found ? found.users : await deps.lookups.reviewQueueUsers(queueName);
    if (!queueRuleAllows(rule, permission, users, principal.username))
      refuse(
        'queue',
        'not-queue-member',
        `Permission denied: ${principal.username} is not assigned to review queue '${queueName}'` +
          (rule === 'member_or_manage' ? ' and may not manage its experiment' : ''),
      );
    return { outcome: { check: 'queue', allow: true, reason: 'queue-member' }, lookedUp: found?.answer };
  }

  async function graphqlFields(input: EvaluationInput): Promise<{ outcomes: CheckOutcome[]; plan: GraphqlPlan }> {
    const { principal, request } = input;
    const { planGraphql, resolveGraphqlChecks } = await loadGraphqlPolicy();
    const plan = planGraphql(request.method, request.query, request.body);
    const outcomes: CheckOutcome[] = [];
    const field = async (name: string, need: Need, refs: readonly ResourceRef[]) => {
      if (need === 'admin') {
        const decision = decideFor(principal, need, refs);
        if (!decision.allow)
          refuse('graphql-field', decision.reason, `Permission denied: ${principal.username} may not use GraphQL field '${name}' (administrators only)`);
        outcomes.push({ check: 'graphql-field', allow: true, reason: decision.reason });
      } else outcomes.push(await granted('graphql-field', principal, need, refs, ` (GraphQL field '${name}')`, ''));
    };
    // Fields that need no look-up are decided first: a refused document costs MLflow nothing.
    for (const check of plan.checks) if (!check.twin) await field(check.field, check.need, []);
    for (const check of await resolveGraphqlChecks(plan, deps.resolve)) await field(check.field, check.need, check.refs);
    return { outcomes, plan };
  }

  /**
   * Only the job's starter may read or cancel it. A job that does not exist, one started by someone
   * else and one with no recorded starter are refused alike: the refusal tells nothing of which.
   */
  async function jobStarter(input: EvaluationInput, field: string): Promise<CheckOutcome> {
    const jobId = input.request.params[field];
    const starter = jobId ? await deps.jobStarters.ownerOf(jobId) : undefined;
    if (starter === undefined || starter !== input.principal.userId)
      refuse('job-starter', 'not-job-starter', `Permission denied: ${input.principal.username} may not use a job they did not start`);
    return { check: 'job-starter', allow: true, reason: 'job-starter' };
  }

  /** A guarded field set by a non-administrator refuses the request. */
  function guard(request: ResolveRequest, guarded: FieldGuard): CheckOutcome {
    const field = guardedField(guarded, request);
    if (field !== undefined)
      refuse('guard', 'reserved-field', `Permission denied: only administrators may set ${field === guarded.field ? `'${field}'` : field} here`);
    return { check: 'guard', allow: true, reason: 'not-reserved' };
  }

  async function source(input: EvaluationInput): Promise<CheckOutcome | undefined> {
    const sources = await modelVersionSourceRefs(input.request.body, deps.lookups, artifactPrefixWorkspace(deps.workspaceMode));
    return sources.length > 0 ? await granted('source', input.principal, 'read', sources, '', ' the model version source') : undefined;
  }

  /** Every check the row declares (`routeChecks`), in order; the first refusal decides. */
  async function evaluate(input: EvaluationInput): Promise<Verdict> {
    const first = await main(input.principal, input.entry, input.refs);
    if (!first.allow || input.principal.isAdmin) return first;
    const checks: CheckOutcome[] = [...first.checks];
    const add = (outcome: CheckOutcome | undefined) => {
      if (outcome) checks.push(outcome);
    };
    let lookedUp: Verdict['lookedUp'];
    let graphql: GraphqlPlan | undefined;
    try {
      for (const check of routeChecks(input.entry)) {
        switch (check.check) {
          case 'guard':
            add(guard(input.request, check.guard));
            break;
          case 'rename':
            add(await rename(input, check.field));
            break;
          case 'kind':
            add(await kindChange(input, check.field));
            break;
          case 'also':
            add(await also(input, check.also));
            break;
          case 'queue': {
            const found = await queue(input, check.rule, first.permission);
            add(found.outcome);
            lookedUp = found.lookedUp;
            break;
          }
          case 'source':
            add(await source(input));
            break;
          case 'job-starter':
            add(await jobStarter(input, check.field));
            break;
          case 'graphql-field': {
            const fields = await graphqlFields(input);
            checks.push(...fields.outcomes);
            graphql = fields.plan;
            break;
          }
          default:
            check satisfies never;
        }
      }
    } catch (e) {
      if (!(e instanceof Refusal)) throw e;
      return { allow: false, reason: e.outcome.reason, checks: [...checks, e.outcome], message: e.message };
    }
    // A GraphQL document is decided by its fields (the route itself only needs a signed-in caller).
    const deciding = graphql ? (checks.at(-1) ?? first.checks[0]!) : first.checks[0]!;
    return { allow: true, reason: deciding.reason, checks, permission: first.permission, lookedUp, graphql };
  }

  return { decideFor, decideNamed, main, evaluate };
}

export type Evaluator = ReturnType<typeof createEvaluator>;
