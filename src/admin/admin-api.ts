import { inWorkspace } from '../workspaces/request-workspace.js';
import { DEFAULT_WORKSPACE } from '../workspaces/names.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';
import { badRequest, FlowgateError, forbidden, sendJson, unauthenticated } from '../errors.js';
import type { Authenticator } from '../http/credentials.js';
import type { Principal } from '../principals/types.js';
import { adminIdOf, withScopedTwins } from '../resources/kinds.js';
import type { AdminAccessReason } from '../resources/reasons.js';
import { parseJson, readBody } from '../http/body.js';
import { ADMIN_ROUTES, routePrefixes } from './routes.js';
import { normalizeTarget, ownRoutePath } from '../proxy/normalize-path.js';
import { MAX_BATCH_BODY_BYTES, NOT_BATCHED, type BatchCall } from './batch.js';
import type { AdminDeps, AdminResult, AdminRoute } from './types.js';
import { parseWith } from './validation.js';

const ROUTE_METHODS: readonly AdminRoute['method'][] = ['GET', 'POST', 'PATCH', 'DELETE'];

export interface AdminMatch {
  readonly route: AdminRoute;
  readonly params: Record<string, string>;
}

/** The outcome of an admin route's access rule, with its reason for logs and metrics. */
type AccessVerdict = { allow: boolean; reason: AdminAccessReason };

function access(route: AdminRoute, principal: Principal, params: Record<string, string>, deps: AdminDeps): AccessVerdict | Promise<AccessVerdict> {
  if (principal.isAdmin) return { allow: true, reason: 'admin' };
  switch (route.access) {
    case 'admin':
      return { allow: false, reason: 'admin-only-route' };
    case 'authenticated':
      return { allow: true, reason: 'authenticated-route' };
    case 'self':
      return params.username === principal.username ? { allow: true, reason: 'self' } : { allow: false, reason: 'not-self' };
    case 'manage': {
      const r = route.resource;
      const id = r && adminIdOf(r.kind, params);
      const verdict = (allow: boolean): AccessVerdict => (allow ? { allow, reason: 'manage-grant' } : { allow, reason: 'no-manage-grant' });
      if (r === undefined || id === undefined) return verdict(false);
      const allow = deps.canManage(principal, { kind: r.kind, id });
      return allow instanceof Promise ? allow.then(verdict) : verdict(allow);
    }
  }
}

/** Proof that a request passed its route's access rule: `handle` takes nothing else, so no route runs unchecked. */
export interface AdminAccess {
  readonly match: AdminMatch;
  readonly principal: Principal;
  readonly reason: AdminAccessReason;
}

/** What the admin API needs besides its routes' deps. */
export interface AdminApiDeps extends AdminDeps {
  /**
   * Proves a request's credential again, as the pipeline did when its headers came (its loaders, not
   * counted twice in the metrics): a body may arrive up to the read deadline later, after the token it
   * came with was revoked, its session ended or its JWT expired.
   */
  readonly credentialNow: Authenticator;
  /**
   * Refuses a batch call's `workspace` as a request's X-MLFLOW-WORKSPACE is refused (batchWorkspaceCheck:
   * 404 for a workspace MLflow does not have; 400 for any but `default` when MLflow runs without
   * workspaces). Absent: a call may name only `default`.
   */
  readonly checkWorkspace?: (name: string) => Promise<void>;
}

/** The admin API: a find-my-way router compiled once over the route table. */
export function createAdminApi(deps: AdminApiDeps, maxBodyBytes: number, routes: readonly AdminRoute[] = ADMIN_ROUTES) {
  const router = FindMyWay({ caseSensitive: true, ignoreTrailingSlash: false, ignoreDuplicateSlashes: false });
  for (const route of routes)
    for (const path of withScopedTwins(route.path))
      for (const prefix of routePrefixes(route)) router.on(route.method, prefix + path, () => undefined, route);

  /**
   * A batch call's route, its path read as a request's is (src/proxy/normalize-path.ts): malformed or
   * double percent-encoding, control characters and `.`/`..` segments refused rather than resolved, so a
   * call names no group `..` that no request could name again.
   */
  function matchCall(call: BatchCall, index: number): { route: AdminRoute; params: Record<string, string>; search: string } {
    const at = call.path.indexOf('?');
    const target = `/api/2.0/mlflow/${(at < 0 ? call.path : call.path.slice(0, at)).replace(/^[\\/]+/, '')}`;
    let path: string | undefined;
    try {
      normalizeTarget(target);
      path = ownRoutePath(target);
    } catch (e) {
      if (e instanceof FlowgateError) throw badRequest(`Call ${index}: ${e.message.replace(/^The request path/, 'its path')} (${call.path})`);
      throw e;
    }
    if (path === undefined)
      throw badRequest(`Call ${index}: flowgate's own routes take no '.' or '..' path segments: a name in a path is one segment, its '/' percent-encoded (${call.path})`);
    const m = router.find(call.method, path);
    const route = m?.store as AdminRoute | undefined;
    if (!m || !route) throw badRequest(`Call ${index}: no admin endpoint ${call.method} ${call.path} to batch`);
    const refused = NOT_BATCHED.get(route.path);
    if (refused !== undefined) throw badRequest(`Call ${index}: ${call.method} ${call.path} cannot be batched: ${refused}`);
    return { route, params: { ...(m.params as Record<string, string>) }, search: at < 0 ? '' : call.path.slice(at + 1) };
  }

  /** Each workspace the calls name, checked once as a request's X-MLFLOW-WORKSPACE is (the first call naming it is blamed). */
  async function checkWorkspaces(calls: readonly BatchCall[]): Promise<void> {
    const first = new Map<string, number>();
    for (const [index, call] of calls.entries()) if (call.workspace !== undefined && !first.has(call.workspace)) first.set(call.workspace, index);
    for (const [name, index] of first) {
      try {
        if (deps.checkWorkspace) await deps.checkWorkspace(name);
        else if (name !== DEFAULT_WORKSPACE) throw badRequest(`'workspace' is '${name}', but this flowgate acts in no workspace but 'default'`);
      } catch (e) {
        if (e instanceof FlowgateError) throw new FlowgateError(e.code, `Call ${index}: ${e.message}`, e.headers, e.reason);
        throw e;
      }
    }
  }

  /**
   * The calls of a batch, each matched, authorized and validated like a request of its own, inside one
   * transaction: the first refusal undoes them all. The policy index and caches are rebuilt from the
   * store afterwards, whether it committed or not, so nothing written and undone stays in memory.
   */
  async function runBatch(principal: Principal, calls: readonly BatchCall[]): Promise<AdminResult[]> {
    // Every call matched, and every workspace checked (MLflow asked), before the transaction holds the store.
    const planned = calls.map((call, index) => ({ call, index, ...matchCall(call, index) }));
    await checkWorkspaces(calls);
    try {
      return await deps.sql.transaction(async () => {
        const results: AdminResult[] = [];
        for (const { call, index, route, params, search } of planned) {
          // A call naming its workspace is decided and made in it, as its own request would be.
          const made = async () => {
            const verdict = await access(route, principal, params, deps);
            if (!verdict.allow) throw forbidden(`Call ${index}: permission denied: ${principal.username} may not ${route.summary.toLowerCase()}`, verdict.reason);
            const body = route.body ? parseWith(route.body, call.body) : undefined;
            return route.handler({ principal, params, query: new URLSearchParams(search), body }, handlerDeps);
          };
          try {
            results.push(await (call.workspace === undefined ? made() : inWorkspace(call.workspace, made)));
          } catch (e) {
            // The caller sent many calls (`flowgate policy apply` sends a whole diff): say which one failed.
            if (e instanceof FlowgateError && !e.message.startsWith('Call ')) throw new FlowgateError(e.code, `Call ${index}: ${e.message}`, e.headers, e.reason);
            throw e;
          }
        }
        return results;
      });
    } catch (e) {
      if (e instanceof FlowgateError && !e.message.startsWith('Call ')) throw new FlowgateError(e.code, `In the batch: ${e.message}`, e.headers, e.reason);
      throw e;
    } finally {
      await deps.policyChanged();
    }
  }
  const handlerDeps: AdminDeps = { ...deps, runBatch };

  /** The batch route reads what MAX_BATCH_CALLS calls need (an administrator's only: its access is checked before its body). */
  const bodyLimit = (route: AdminRoute): number => (route.path === '/mlflow/permissions/batch' ? Math.max(maxBodyBytes, MAX_BATCH_BODY_BYTES) : maxBodyBytes);

  /** The access check: the access when allowed, else a 403 thrown. */
  function authorize(principal: Principal, m: AdminMatch): AdminAccess | Promise<AdminAccess> {
    const granted = (verdict: AccessVerdict): AdminAccess => {
      if (!verdict.allow) throw forbidden(`Permission denied: ${principal.username} may not ${m.route.summary.toLowerCase()}`, verdict.reason);
      return { match: m, principal, reason: verdict.reason };
    };
    const verdict = access(m.route, principal, m.params, deps);
    return verdict instanceof Promise ? verdict.then(granted) : granted(verdict);
  }

  /** The caller as their credential proves them once the body arrived: a revoked token or an ended session proves no one (401). */
  async function currentPrincipal(req: IncomingMessage, principal: Principal): Promise<Principal> {
    const now = (await deps.credentialNow(req)).principal;
    if (!now || now.userId !== principal.userId) throw unauthenticated();
    return now;
  }

  return {
    routes,
    /** `encodedPath` is the normalized path with each segment percent-encoded. */
    match(method: string, encodedPath: string): AdminMatch | undefined {
      const found = router.find(method as 'GET', encodedPath);
      if (!found) return undefined;
      return { route: found.store as AdminRoute, params: { ...(found.params as Record<string, string>) } };
    },
    /** The methods that do serve a path no route matched under the method asked (the 405's `Allow`). */
    allowedMethods(encodedPath: string): string[] {
      const served = ROUTE_METHODS.filter((method) => router.find(method, encodedPath) !== null);
      return served.includes('GET') ? [...served, 'HEAD'] : served;
    },
    /** The access check, timed by the pipeline (and made again once a request's body has arrived). */
    authorize,
    async handle(req: IncomingMessage, res: ServerResponse, granted: AdminAccess, query: URLSearchParams) {
      const m = granted.match;
      let principal = granted.principal;
      let body: unknown;
      if (m.route.body) {
        body = parseWith(m.route.body, parseJson(await readBody(req, bodyLimit(m.route))));
        // A body may arrive up to the read deadline after the check: a caller demoted, disabled or
        // deleted meanwhile, or whose token was revoked or session ended, must not act with the
        // rights they had when the headers came.
        principal = (await authorize(await currentPrincipal(req, principal), m)).principal;
      } else req.resume();
      const result = await m.route.handler({ principal, params: m.params, query, body }, handlerDeps);
      sendJson(res, result.status, result.body);
    },
  };
}

export type AdminApi = ReturnType<typeof createAdminApi>;
