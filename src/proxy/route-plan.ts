import { routeChecks, type RouteCheck } from '../authz/route-checks.js';
import type { AfterHook, IdSource, RouteEntry } from '../authz/types.js';
import { isResourceNeed } from '../resources/permissions.js';
import { HOOKS } from './hooks/index.js';

/** What the gate does for one catalog row and one kind of caller, worked out once at start. */
export interface CallerPlan {
  /** The request's body is read (and held) before deciding. */
  readonly readsBody: boolean;
  /** The route's own resources are resolved. */
  readonly resolves: boolean;
  /** The checks beyond the main one that run for this caller (none for an administrator). */
  readonly checks: readonly RouteCheck[];
  /** The after-hook that works for this caller, if any. */
  readonly hook: AfterHook | undefined;
  /** Nothing to read, resolve further or arrange afterwards: decided without a promise when the resources are at hand. */
  readonly immediate: boolean;
}

export interface RoutePlan {
  readonly admin: CallerPlan;
  readonly user: CallerPlan;
  /** How the body is read: MLflow's JSON, or an OTLP export (protobuf or OTLP JSON). */
  readonly bodyFormat: 'json' | 'otlp';
}

/**
 * The body holds, or may hold, an id the decision reads: a body or `auto` field, or a path id some
 * handler may also read from the body (all copies must agree; artifact paths are never in a body, and
 * a Skill is read from its path alone: a registration's body may be a multipart upload; so is an MCP
 * server, which MLflow's handlers take from the path only).
 */
const idInBody = (id: IdSource, method: string) =>
  id.kind !== 'none' &&
  (id.from === 'auto' || id.from === 'body' || (id.from === 'param' && id.kind !== 'artifact_path' && id.kind !== 'skill' && id.kind !== 'mcp_server' && method !== 'GET'));

function planFor(entry: RouteEntry, isAdmin: boolean): CallerPlan {
  const spec = entry.after === undefined ? undefined : HOOKS[entry.after];
  const hook = spec && (spec.for === 'everyone' || !isAdmin) ? entry.after : undefined;
  const decidesOnResources = isResourceNeed(entry.need);
  const resolves = (!isAdmin && decidesOnResources) || (hook !== undefined && spec?.resolves === true);
  // The evaluator runs the same list (routeChecks), and none of it for an administrator.
  const checks = isAdmin ? [] : routeChecks(entry);
  const furtherChecks = checks.length > 0;
  const method = entry.method;
  let readsBody: boolean;
  if (isAdmin) readsBody = method !== 'GET' && hook !== undefined && spec!.readsBody;
  // MLflow runs a GraphQL document from the JSON body for GET too.
  else if (entry.after === 'graphql') readsBody = true;
  else if (method === 'GET') readsBody = false;
  else
    readsBody =
      (hook !== undefined && spec!.readsBody) ||
      entry.need === 'create' ||
      furtherChecks ||
      // Every id the decision reads must be there to read.
      idInBody(entry.id, method);
  return { readsBody, resolves, checks, hook, immediate: !readsBody && !furtherChecks && hook === undefined };
}

/** Plans for every row, compiled once; the gate looks them up by the matched row. */
export function compileRoutePlans(catalog: readonly RouteEntry[]): (entry: RouteEntry) => RoutePlan {
  const plans = new Map<RouteEntry, RoutePlan>();
  for (const entry of catalog)
    plans.set(entry, {
      admin: planFor(entry, true),
      user: planFor(entry, false),
      bodyFormat: routeChecks(entry).some((c) => c.check === 'also' && c.also.id.kind === 'otlp_trace_ids') ? 'otlp' : 'json',
    });
  return (entry) => {
    const plan = plans.get(entry);
    if (!plan) throw new Error(`no route plan for ${entry.method} ${entry.pattern}`);
    return plan;
  };
}
