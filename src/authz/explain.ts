import type { Principal } from '../principals/types.js';
import { effectivePermission } from './decide.js';
import type { Evaluator, Verdict } from './evaluate.js';
import type { GrantsRepo } from './grants-repo.js';
import type { PolicyReader } from './policy.js';
import type { ResourceResolver } from './resolve.js';
import type { RouteMatcher } from './route-matcher.js';
import type { Permission, ResourceRef } from './types.js';

export interface ExplainRequest {
  readonly method: string;
  /** Decoded path relative to MLflow's root (no base path). */
  readonly path: string;
  readonly search: string;
  readonly body: unknown;
}

export interface Explanation {
  readonly route: { readonly method: string; readonly pattern: string; readonly need: string; readonly resource: string } | null;
  readonly resources: ReadonlyArray<{
    readonly kind: ResourceRef['kind'];
    readonly id: string;
    readonly direct: Permission | null;
    readonly groups: ReadonlyArray<{ readonly group: string; readonly permission: Permission }>;
    readonly effective: Permission;
    readonly rule: string;
  }>;
  readonly verdict: Pick<Verdict, 'allow' | 'reason' | 'checks'> & { readonly message?: string };
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
  readonly grants: GrantsRepo;
  readonly defaultPermission: Permission;
  /** The names of the groups a user belongs to. */
  readonly groupNamesOf: (userId: number) => Promise<readonly string[]>;
}) {
  return async function explain(principal: Principal, r: ExplainRequest): Promise<Explanation> {
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
    const route = { method: entry.method, pattern: entry.pattern, need: entry.need, resource: entry.resource };
    const request = { method: r.method, query: new URLSearchParams(r.search), body: r.body, params, headers: {} };
    const decidesOnResources = entry.need === 'read' || entry.need === 'edit' || entry.need === 'manage';
    const refs = decidesOnResources ? await d.resolve(entry, request) : [];
    const verdict = await d.evaluator.evaluate({ principal, entry, request, refs });
    const memberOf = new Set(await d.groupNamesOf(principal.userId));
    const resources: Array<Explanation['resources'][number]> = [];
    for (const ref of refs) {
      const on = await d.grants.onResource(ref.kind, ref.id);
      const direct = on.users.find((g) => g.name === principal.username)?.permission ?? null;
      const facts = d.policy.factsFor(principal, ref);
      const groups = on.groups.filter((g) => memberOf.has(g.name)).map((g) => ({ group: g.name, permission: g.permission }));
      const effective = effectivePermission(facts, d.defaultPermission);
      resources.push({ kind: ref.kind, id: ref.id, direct, groups, effective: effective.permission, rule: effective.reason });
    }
    return {
      route,
      resources,
      verdict: { allow: verdict.allow, reason: verdict.reason, checks: verdict.checks, ...(verdict.message ? { message: verdict.message } : {}) },
    };
  };
}

export type Explainer = ReturnType<typeof createExplainer>;
