import type { IncomingMessage } from 'node:http';
import { isAdminNamespace } from '../admin/routes.js';
import type { RouteMatcher } from '../authz/route-matcher.js';

/**
 * Which CORS preflights may reach MLflow without credentials. By the Fetch standard a browser sends
 * a preflight (OPTIONS with `Origin` and `Access-Control-Request-Method`) without the
 * `Authorization` header or cookies, so a web app on another origin could never get past
 * authentication to the request it wants to make. With `FLOWGATE_SKIP_AUTH_PREFLIGHT` (oauth2-proxy's
 * `--skip-auth-preflight`, Pomerium's `cors_allow_preflight`) the preflight of a request MLflow
 * serves goes to MLflow as it is, and MLflow's own CORS settings (`--cors-allowed-origins`) answer
 * it: Flask-CORS replies without running the route's handler. The request that follows carries its
 * credentials and is authenticated and decided as usual.
 *
 * Returns the route template of the request the preflight announces, or undefined when the
 * request is not a preflight, is for flowgate's admin API, or announces nothing in the catalog
 * (then it is handled like any other unauthenticated request).
 */
export function preflightRoute(req: IncomingMessage, path: string, matcher: RouteMatcher): string | undefined {
  const origin = req.headers.origin;
  const announced = req.headers['access-control-request-method'];
  if (typeof origin !== 'string' || origin === '' || typeof announced !== 'string') return undefined;
  // Method names are case-sensitive; browsers send the standard ones in upper case.
  if (announced === 'OPTIONS' || isAdminNamespace(path)) return undefined;
  return matcher.match(announced, path)?.entry.pattern;
}
