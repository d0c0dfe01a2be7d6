import { FlowgateError } from '../errors.js';
import type { Principal } from '../principals/types.js';
import { hasNumericId, knownName } from '../resources/kinds.js';
import { isResourceNeed, permits } from '../resources/permissions.js';
import type { GrantReason, WorkspaceReason } from '../resources/reasons.js';
import type { WorkspaceStanding } from '../workspaces/standing.js';
import { effectiveOn } from './effective.js';
import type { Evaluator, Verdict } from './evaluate.js';
import type { PatternGrant } from './pattern-index.js';
import type { PolicyReader } from './policy.js';
import { isMissingRef, type ResourceResolver } from './resolve.js';
import type { RouteMatcher } from './route-matcher.js';
import type { Permission, ResourceRef, RouteEntry } from './types.js';

export interface ExplainRequest {
  readonly method: string;
  /** Decoded path relative to MLflow's root (no base path). */
  readonly path: string;
  readonly search: string;
  readonly body: unknown;
}

/** The catalog row a request matched, as an explanation shows it. */
export type ExplainedRoute = Pick<RouteEntry, 'method' | 'pattern' | 'need' | 'resource'>;

export interface Explanation {
  readonly route: ExplainedRoute | null;
  readonly resources: ReadonlyArray<{
    readonly kind: ResourceRef['kind'];
    readonly id: string;
    readonly direct: Permission | null;
    readonly groups: ReadonlyArray<{ readonly group: string; readonly permission: Permission }>;
    /** The experiment's name, when pattern grants were matched against it. */
    readonly name?: string;
    /** The pattern grants that bear on the caller here: their own deciding one, and each of their groups'. */
    readonly patterns: ReadonlyArray<ExplainedPattern>;
    readonly effective: Permission;
    /** The grant (or the default) that made `effective`. */
    readonly rule: GrantReason | WorkspaceReason;
    /** When a pattern decided (`rule` is a pattern reason): which. */
    readonly decidingPattern?: ExplainedPattern;
  }>;
  readonly verdict: Pick<Verdict, 'allow' | 'reason' | 'checks'> & { readonly message?: string };
}

export interface ExplainedPattern {
  readonly pattern: string;
  /** `user:<name>` or `group:<name>`. */
  readonly grantee: string;
  readonly permission: Permission;
}

export interface ExplainOptions {
  /**
   * For a caller who is not an administrator: a request naming anything they may not read is
   * answered as one naming nothing that exists, so explain tells no name, id, grant or existence
   * that MLflow would not tell them.
   */
  readonly onlyReadable?: boolean;
}

/** The one answer for a request that names something the caller may not read, or nothing that exists. */
function notExplained(route: Explanation['route']): Explanation {
  return {
    route,
    resources: [],
    verdict: {
      allow: false,
      reason: 'not-readable',
      checks: [],
      message: 'This request names something you may not read, or something that does not exist; flowgate explains only what you may read',
    },
  };
}

const doesNotExist = (e: unknown) => e instanceof FlowgateError && e.code === 'RESOURCE_DOES_NOT_EXIST';

/** The pattern that decided, for each pattern reason; undefined for the others. */
function decidingPattern(rule: GrantReason | WorkspaceReason, permission: Permission, bearing: readonly PatternGrant[]): PatternGrant | undefined {
  if (rule === 'pattern-grant') return bearing.find((p) => p.grantee.type === 'user');
  if (rule === 'group-pattern-deny') return bearing.find((p) => p.grantee.type === 'group' && p.permission === 'NO_PERMISSIONS');
  if (rule === 'group-pattern-grant') return bearing.find((p) => p.grantee.type === 'group' && p.permission === permission);
  return undefined;
}

/**
 * The decision flowgate would make for a caller and a request, with its reasons: the catalog row,
 * the resources the request resolves to, every grant considered on each, and every check the
 * evaluation made. The same code path as the gate's (matcher, resolver, evaluator); nothing is
 * forwarded to MLflow besides the look-ups resolution needs.
 */
export function createExplainer(d: {
  readonly matcher: RouteMatcher;
  readonly resolve: ResourceResolver;
  readonly evaluator: Evaluator;
  readonly policy: PolicyReader;
  readonly defaultPermission: Permission;
  /** The groups a user belongs to, by name (to name the groups of grants and pattern grants). */
  readonly groupsOf: (userId: number) => Promise<ReadonlyArray<{ readonly id: number; readonly name: string }>>;
  /** An experiment's name from MLflow, for callers holding experiment pattern grants. */
  readonly experimentName?: (experimentId: string) => Promise<string>;
  /** Callers' standing in MLflow's workspaces (the request's, and a named one's membership), as the gate weighs it. */
  readonly workspaces?: Pick<WorkspaceStanding, 'current' | 'in'>;
}) {
  const effective = (principal: Principal, ref: ResourceRef) => effectiveOn(d.policy, principal, ref, d.defaultPermission, d.workspaces);

  /** An experiment carries its name when the caller's pattern grants may match it. */
  async function withName(principal: Principal, ref: ResourceRef): Promise<ResourceRef> {
    if (!hasNumericId(ref) || ref.name !== undefined || d.experimentName === undefined) return ref;
    if (principal.isAdmin || !d.policy.mayNeedExperimentNames(principal)) return ref;
    return { ...ref, name: await d.experimentName(ref.id) };
  }

  /** Whether the caller may read every resource, as the gate decides it (pattern grants matched against MLflow's names). */
  function readsAll(principal: Principal, refs: readonly ResourceRef[]): boolean {
    return refs.every((ref) => permits(effective(principal, ref).permission, 'read'));
  }

  return async function explain(principal: Principal, r: ExplainRequest, options: ExplainOptions = {}): Promise<Explanation> {
    if (!options.onlyReadable || principal.isAdmin) return explainFully(principal, r);
    const m = d.matcher.match(r.method, r.path);
    try {
      return await explainFully(principal, r, true);
    } catch (e) {
      if (e instanceof Unreadable || doesNotExist(e)) return notExplained(m ? routeOf(m.entry) : null);
      throw e;
    }
  };

  async function explainFully(principal: Principal, r: ExplainRequest, onlyReadable = false): Promise<Explanation> {
    const m = d.matcher.match(r.method, r.path);
    if (!m) {
      const allow = principal.isAdmin;
      return {
        route: null,
        resources: [],
        verdict: { allow, reason: allow ? 'admin' : 'route-not-found', checks: [], ...(allow ? {} : { message: 'not an MLflow route flowgate knows' }) },
      };
    }
    const { entry, params } = m;
    const route = routeOf(entry);
    const request = { method: r.method, query: new URLSearchParams(r.search), body: r.body, params, headers: {} };
    const decidesOnResources = isResourceNeed(entry.need);
    const refs = decidesOnResources ? await d.resolve(entry, request) : [];
    const named = await Promise.all(refs.map((ref) => withName(principal, ref)));
    // A gateway id MLflow does not have is told apart from a hidden object by no one but an administrator.
    // A resource a registration would make (`createsMissing`) is no secret: MLflow's create tells who asks that it exists.
    const shown = entry.createsMissing ? named.filter((ref) => !isMissingRef(ref)) : named;
    if (onlyReadable && (shown.some(isMissingRef) || !readsAll(principal, shown))) throw new Unreadable();
    const verdict = await d.evaluator.evaluate({ principal, entry, request, refs });
    // A further id (a model version's source, a linked run) refused is a resource the caller may not read either.
    if (onlyReadable && !verdict.allow && FURTHER_RESOURCE_CHECKS.has(verdict.checks.at(-1)?.check ?? 'main')) throw new Unreadable();
    const memberOf = await d.groupsOf(principal.userId);
    const groupNames = new Map(memberOf.map((g) => [g.id, g.name]));
    const explained = (p: PatternGrant): ExplainedPattern => ({
      pattern: p.pattern,
      grantee: p.grantee.type === 'user' ? `user:${principal.username}` : `group:${groupNames.get(p.grantee.id) ?? p.grantee.id}`,
      permission: p.permission,
    });
    const resources: Array<Explanation['resources'][number]> = [];
    for (const ref of named) {
      const eff = effective(principal, ref);
      const groupGrant = new Map(eff.groups.map((g) => [g.groupId, g.permission]));
      const groups = memberOf.flatMap((g) => (groupGrant.has(g.id) ? [{ group: g.name, permission: groupGrant.get(g.id)! }] : []));
      const name = knownName(ref);
      const bearing = name === undefined || name === null ? [] : d.policy.bearingPatterns(ref.kind, name, principal);
      const decided = decidingPattern(eff.reason, eff.permission, bearing);
      resources.push({
        kind: ref.kind,
        id: ref.id,
        ...(hasNumericId(ref) && typeof ref.name === 'string' ? { name: ref.name } : {}),
        direct: eff.direct ?? null,
        groups,
        patterns: bearing.map(explained),
        effective: eff.permission,
        rule: eff.reason,
        ...(decided ? { decidingPattern: explained(decided) } : {}),
      });
    }
    return {
      route,
      resources,
      verdict: { allow: verdict.allow, reason: verdict.reason, checks: verdict.checks, ...(verdict.message ? { message: verdict.message } : {}) },
    };
  }
}

const routeOf = (entry: RouteEntry): ExplainedRoute => ({ method: entry.method, pattern: entry.pattern, need: entry.need, resource: entry.resource });

/** Thrown inside an explanation that reached a resource the caller may not read. */
class Unreadable {}

const FURTHER_RESOURCE_CHECKS: ReadonlySet<string> = new Set(['also', 'source', 'graphql-field']);

export type Explainer = ReturnType<typeof createExplainer>;
