import FindMyWay from 'find-my-way';
import type { HttpMethod, RouteEntry } from './types.js';

export interface RouteMatch {
  readonly entry: RouteEntry;
  readonly params: Record<string, string>;
}

export interface RouteMatcher {
  match(method: string, path: string): RouteMatch | undefined;
}

const SUPPORTED_METHODS: ReadonlySet<string> = new Set<HttpMethod>(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

const NEEDS_ESCAPE = /[%?#]/;

/**
 * The proxy hands over a path it has already percent-decoded, while find-my-way decodes again and
 * cuts at `?`, `#` (and `;` if asked). Escaping exactly those characters, plus `%` itself, makes
 * find-my-way's decoding give back the path unchanged, so an artifact named `50% a?b.txt` is
 * matched and captured as written.
 */
function escapeForRouter(path: string): string {
  return path.replace(/[%?#]/g, (ch) => (ch === '%' ? '%25' : ch === '?' ? '%3F' : '%23'));
}

/** Compiles the catalog once; `match` is then a tree walk. */
export function createRouteMatcher(catalog: readonly RouteEntry[]): RouteMatcher {
  const router = FindMyWay({
    caseSensitive: true,
    ignoreTrailingSlash: false,
    ignoreDuplicateSlashes: false,
    // Registered model names and run ids travel in path segments of a few routes; MLflow puts no
    // 100-character limit on them, so neither does the matcher.
    maxParamLength: 4096,
    // No onBadUrl: with one set, `find` returns a store-less handle for an undecodable path
    // instead of null.
  });
  const noop = () => undefined;
  for (const entry of catalog) {
    router.on(entry.method, entry.pattern, noop, entry);
  }
  // Matches of paths that are a catalog pattern verbatim (the fixed paths most MLflow calls use),
  // per method: at most one entry per catalog row, whatever clients send.
  const staticMatches = new Map<string, Map<string, RouteMatch>>();
  for (const method of SUPPORTED_METHODS) staticMatches.set(method, new Map());

  return {
    match(method, path) {
      const verb = method === 'HEAD' ? 'GET' : method;
      const known = staticMatches.get(verb);
      if (known === undefined || !path.startsWith('/')) return undefined;
      const hit = known.get(path);
      if (hit !== undefined) return hit;
      const found = router.find(verb as HttpMethod, NEEDS_ESCAPE.test(path) ? escapeForRouter(path) : path);
      if (!found?.store) return undefined;
      const entry = found.store as RouteEntry;
      // find-my-way's params object (no prototype) holds only the names the pattern declares.
      const params = found.params as Record<string, string>;
      for (const name in params) if (params[name] === undefined) delete params[name];
      if (path !== entry.pattern) return { entry, params };
      // Shared by every later request on this path, so nobody may change it.
      const shared: RouteMatch = Object.freeze({ entry, params: Object.freeze(params) });
      known.set(path, shared);
      return shared;
    },
  };
}

const API_PREFIXES = ['/api/', '/ajax-api/', '/graphql', '/get-artifact', '/model-versions/', '/v1/', '/gateway/'];

/** Paths that reach MLflow's data; an unmatched one is denied rather than forwarded. */
export function isApiPath(path: string): boolean {
  return API_PREFIXES.some((prefix) => path.startsWith(prefix));
}
