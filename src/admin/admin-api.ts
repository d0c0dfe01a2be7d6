import type { IncomingMessage, ServerResponse } from 'node:http';
import FindMyWay from 'find-my-way';
import { forbidden, sendJson } from '../errors.js';
import type { Principal } from '../principals/types.js';
import { parseJson, readBody } from '../proxy/body.js';
import { ADMIN_API_PREFIXES, ADMIN_ROUTES } from './routes.js';
import type { AdminDeps, AdminRoute } from './types.js';
import { parseWith } from './validation.js';

export interface AdminMatch {
  readonly route: AdminRoute;
  readonly params: Record<string, string>;
}

function allowed(route: AdminRoute, principal: Principal, params: Record<string, string>, deps: AdminDeps): boolean {
  if (principal.isAdmin) return true;
  switch (route.access) {
    case 'admin':
      return false;
    case 'authenticated':
      return true;
    case 'self':
      return params.username === principal.username;
    case 'manage': {
      const r = route.resource;
      const id = r && params[r.param];
      return r !== undefined && id !== undefined && deps.canManage(principal, { kind: r.kind, id });
    }
  }
}

/** The admin API: a find-my-way router compiled once over the route table. */
export function createAdminApi(deps: AdminDeps, maxBodyBytes: number, routes: readonly AdminRoute[] = ADMIN_ROUTES) {
  const router = FindMyWay({ caseSensitive: true, ignoreTrailingSlash: false, ignoreDuplicateSlashes: false });
  for (const route of routes)
    for (const prefix of ADMIN_API_PREFIXES) router.on(route.method, prefix + route.path, () => undefined, route);

  return {
    routes,
    /** `encodedPath` is the normalized path with each segment percent-encoded. */
    match(method: string, encodedPath: string): AdminMatch | undefined {
      const found = router.find(method as 'GET', encodedPath);
      if (!found) return undefined;
      return { route: found.store as AdminRoute, params: { ...(found.params as Record<string, string>) } };
    },
    /** The access check alone, timed and counted by the pipeline: the reason when allowed, else a 403 thrown. */
    authorize(principal: Principal, m: AdminMatch): 'admin' | AdminRoute['access'] {
      if (!allowed(m.route, principal, m.params, deps))
        throw forbidden(`Permission denied: ${principal.username} may not ${m.route.summary.toLowerCase()}`);
      return principal.isAdmin ? 'admin' : m.route.access;
    },
    async handle(req: IncomingMessage, res: ServerResponse, principal: Principal, m: AdminMatch, query: URLSearchParams) {
      if (!allowed(m.route, principal, m.params, deps))
        throw forbidden(`Permission denied: ${principal.username} may not ${m.route.summary.toLowerCase()}`);
      let body: unknown;
      if (m.route.body) body = parseWith(m.route.body, parseJson(await readBody(req, maxBodyBytes)));
      else req.resume();
      const result = m.route.handler({ principal, params: m.params, query, body }, deps);
      sendJson(res, result.status, result.body);
    },
  };
}

export type AdminApi = ReturnType<typeof createAdminApi>;
