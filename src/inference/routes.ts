import type { InferenceConfig, InferenceRouteConfig } from './config.js';
import { underPrefix } from './request-path.js';

export interface CompiledRoute {
  readonly config: InferenceRouteConfig;
  readonly name: string;
  readonly hosts: ReadonlySet<string> | undefined;
  readonly prefix: string | undefined;
}

export interface RouteMatch {
  readonly route: CompiledRoute;
  /** The path the model server sees (the prefix removed when the route strips it). */
  readonly upstreamPath: string;
}

export interface RouteTable {
  /** Matches a normalized path. */
  match(host: string | undefined, path: string): RouteMatch | undefined;
  /** Whether some route would claim this request, judged on a loose view of a path that failed normalization. */
  claims(host: string | undefined, loosePath: string): CompiledRoute | undefined;
}

/** Most specific first: host and prefix, then host alone, then prefix alone; longer prefixes first. */
export function compileRoutes(config: InferenceConfig): RouteTable {
  const routes: CompiledRoute[] = config.routes.map((r) => ({
    config: r,
    name: r.name,
    hosts: r.hosts ? new Set(r.hosts) : undefined,
    prefix: r.pathPrefix,
  }));
  const rank = (r: CompiledRoute) => (r.hosts ? 2 : 0) + (r.prefix ? 1 : 0);
  routes.sort((a, b) => rank(b) - rank(a) || (b.prefix?.length ?? 0) - (a.prefix?.length ?? 0));

  const hostOk = (r: CompiledRoute, host: string | undefined) => !r.hosts || (host !== undefined && r.hosts.has(host));

  return {
    match(host, path) {
      for (const route of routes) {
        if (!hostOk(route, host)) continue;
        if (route.prefix && !underPrefix(path, route.prefix)) continue;
        const upstreamPath = route.prefix && route.config.stripPrefix ? path.slice(route.prefix.length) || '/' : path;
        return { route, upstreamPath };
      }
      return undefined;
    },
    claims(host, loosePath) {
      return routes.find((r) => hostOk(r, host) && (!r.prefix || loosePath.startsWith(r.prefix)));
    },
  };
}

/** The Host header without port, lowercased, trailing dot removed. */
export function requestHost(hostHeader: string | undefined): string | undefined {
  if (!hostHeader) return undefined;
  const h = hostHeader.trim().toLowerCase();
  const withoutPort = h.startsWith('[') ? h.slice(0, h.indexOf(']') + 1) : h.replace(/:\d*$/, '');
  return withoutPort.replace(/\.$/, '') || undefined;
}
