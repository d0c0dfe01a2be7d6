import type { RouteMatcher } from './route-matcher.js';
import type { RouteEntry } from './types.js';

/*
 * MLflow's own route rules (Flask `<x>`, `<path:x>`; FastAPI `{x}`, `{x:path}`) held against the
 * catalog: a concrete path for each rule, and which routes no row classifies.
 */

/** One (method, rule) MLflow answers, as scripts/dump-mlflow-routes.py reports it. */
export interface MlflowRoute {
  readonly method: string;
  readonly rule: string;
}

const SAMPLE_SEGMENT = 'sample-1';
const SAMPLE_PATH = '1/run-1/artifacts/dir/a b%.txt';

/**
 * Path parameters whose shape MLflow validates, sampled as a request naming something MLflow could have
 * carries them: an MCP server's `{name:path}` is `<namespace>/<slug>` (exactly one `/`), its
 * `{version:path}` a semantic version (none). Any other `{x:path}` is sampled as a path of many segments.
 */
const SHAPED_PATH_PARAMS: ReadonlyArray<{ readonly under: string; readonly param: string; readonly sample: string }> = [
  { under: '/mcp-servers/', param: '{name:path}', sample: `${SAMPLE_SEGMENT}/${SAMPLE_SEGMENT}` },
  { under: '/mcp-servers/', param: '{version:path}', sample: SAMPLE_SEGMENT },
];

/** A concrete path for a Flask or FastAPI rule. */
export function sampleForRule(rule: string): string {
  const shaped = SHAPED_PATH_PARAMS.reduce((r, { under, param, sample }) => (r.includes(under) ? r.replace(param, sample) : r), rule);
  return shaped
    .replace(/<path:[^>]+>|\{[^}:]+:path\}/g, SAMPLE_PATH)
    .replace(/<(?:[a-z]+:)?[^>]+>|\{[^}]+\}/g, SAMPLE_SEGMENT);
}

/** The paths a Flask or FastAPI rule answers. */
export function regexForRule(rule: string): RegExp {
  const parts = rule.split(/(<path:[^>]+>|\{[^}:]+:path\}|<[^>]+>|\{[^}]+\})/);
  const body = parts
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      return /^<path:|:path\}$/.test(part) ? '.+' : '[^/]+';
    })
    .join('');
  return new RegExp(`^${body}$`);
}

/** A concrete path for a find-my-way pattern. */
export function sampleForPattern(pattern: string): string {
  return pattern.replace(/:[A-Za-z_]+/g, SAMPLE_SEGMENT).replace(/\*$/, SAMPLE_PATH);
}

/** Routes no catalog row classifies, as `METHOD rule`; HEAD must be judged as the GET it mirrors. */
export function unclassifiedRoutes(matcher: RouteMatcher, routes: readonly MlflowRoute[]): string[] {
  const unclassified: string[] = [];
  for (const { method, rule } of routes) {
    const sample = sampleForRule(rule);
    if (!matcher.match(method, sample)) unclassified.push(`${method} ${rule}`);
    // HEAD is answered for every Flask GET.
    else if (method === 'GET' && matcher.match('HEAD', sample)?.entry !== matcher.match('GET', sample)?.entry) {
      unclassified.push(`HEAD ${rule}`);
    }
  }
  return unclassified;
}

/** The catalog rows some route lands on (a wildcard row covers a family). */
export function rowsHitBy(matcher: RouteMatcher, routes: readonly MlflowRoute[]): Set<RouteEntry> {
  const hit = new Set<RouteEntry>();
  for (const { method, rule } of routes) {
    const entry = matcher.match(method, sampleForRule(rule))?.entry;
    if (entry) hit.add(entry);
  }
  return hit;
}

/** Rows (wildcards aside) whose own sample path no route of the same method answers: a too-broad `:param`. */
export function rowsBroaderThanRoutes(rows: readonly RouteEntry[], routes: readonly MlflowRoute[]): string[] {
  const compiled = routes.map((r) => ({ method: r.method, regex: regexForRule(r.rule) }));
  return rows
    .filter((row) => !row.pattern.endsWith('*'))
    .filter((row) => !compiled.some((r) => r.method === row.method && r.regex.test(sampleForPattern(row.pattern))))
    .map((row) => `${row.method} ${row.pattern}`);
}
