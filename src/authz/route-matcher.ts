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
  // Matches of paths that are a catalog pattern verbatim (the fixed paths most MLflow calls use):
  // at most one entry per catalog row, whatever clients send.
  const staticMatches = new Map<string, RouteMatch>();

  return {
    match(method, path) {
      const verb = method === 'HEAD' ? 'GET' : method;
      const key = `${verb} ${path}`;
      const known = staticMatches.get(key);
      if (known) return known;
      if (!SUPPORTED_METHODS.has(verb) || !path.startsWith('/')) return undefined;
      const found = router.find(verb as HttpMethod, escapeForRouter(path));
      if (!found?.store) return undefined;
      const entry = found.store as RouteEntry;
      const params: Record<string, string> = {};
      for (const [name, value] of Object.entries(found.params)) {
        if (value !== undefined) params[name] = value;
      }
      const match = Object.freeze({ entry, params: Object.freeze(params) });
      if (path === entry.pattern) staticMatches.set(key, match);
      return match;
    },
  };
}

const API_PREFIXES = ['/api/', '/ajax-api/', '/graphql', '/get-artifact', '/model-versions/', '/v1/', '/gateway/'];

/** Paths that reach MLflow's data; an unmatched one is denied rather than forwarded. */
export function isApiPath(path: string): boolean {
  return API_PREFIXES.some((prefix) => path.startsWith(prefix));
}
