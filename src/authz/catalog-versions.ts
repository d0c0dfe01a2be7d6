import RECORD from './catalog-versions.json' with { type: 'json' };
import type { MlflowRoute } from './mlflow-rules.js';
import type { RouteEntry } from './types.js';

/*
 * Which MLflow releases flowgate's catalog was checked against, each one's routes, and which
 * catalog rows exist in which releases. Written by `node scripts/mlflow-matrix.mjs record` from
 * route dumps of the installed releases; the tests hold the catalog and the live MLflow to it.
 *
 * Ranges are [since, until) over release order: `until` is the first recorded release without it.
 * A row selector is `METHOD /pattern` (that row exactly) or `/path` (every row whose pattern, with
 * `/ajax-api/` read as `/api/`, is that path or lies under it). A row no selector names exists in
 * every recorded release.
 */

interface RowRange {
  readonly since: string;
  readonly until?: string;
  readonly rows: readonly string[];
}

interface Record {
  readonly releases: readonly string[];
  readonly rowRanges: readonly RowRange[];
  /** [method, rule, since, until?] */
  readonly routes: ReadonlyArray<readonly string[]>;
}

const record = RECORD as Record;

/** The releases recorded, oldest first: one per 3.x minor. */
export const RECORDED_RELEASES: readonly string[] = record.releases;
export const OLDEST_RELEASE = RECORDED_RELEASES[0]!;
export const NEWEST_RELEASE = RECORDED_RELEASES[RECORDED_RELEASES.length - 1]!;

/** Numeric comparison of dotted versions (`3.10.1` after `3.9.0`); pre-release suffixes are ignored. */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) => v.split('.').map((p) => Number.parseInt(p, 10) || 0);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

const inRange = (version: string, since: string, until: string | undefined) =>
  compareVersions(version, since) >= 0 && (until === undefined || compareVersions(version, until) < 0);

export const isRecordedRelease = (version: string): boolean => RECORDED_RELEASES.includes(version);

/** The routes a recorded release answers; undefined for a release that was not recorded. */
export function routesOf(release: string): MlflowRoute[] | undefined {
  if (!isRecordedRelease(release)) return undefined;
  return record.routes
    .filter(([, , since, until]) => inRange(release, since!, until))
    .map(([method, rule]) => ({ method: method!, rule: rule! }));
}

const apiForm = (pattern: string) => pattern.replace(/^\/ajax-api\//, '/api/');

export function selectorNames(selector: string, row: Pick<RouteEntry, 'method' | 'pattern'>): boolean {
  const space = selector.indexOf(' ');
  if (space > 0) return selector.slice(0, space) === row.method && selector.slice(space + 1) === row.pattern;
  const path = apiForm(row.pattern);
  return path === selector || path.startsWith(`${selector}/`);
}

/** The ranges of releases a row exists in, or undefined when it exists in every recorded release. */
export function rangesOfRow(row: Pick<RouteEntry, 'method' | 'pattern'>): RowRange[] | undefined {
  const ranges = record.rowRanges.filter((range) => range.rows.some((selector) => selectorNames(selector, row)));
  return ranges.length > 0 ? ranges : undefined;
}

/** Whether the catalog row is a route of that MLflow release (by the record). */
export function rowExistsIn(row: Pick<RouteEntry, 'method' | 'pattern'>, release: string): boolean {
  const ranges = rangesOfRow(row);
  return ranges === undefined || ranges.some((r) => inRange(release, r.since, r.until));
}

/** For tests: every selector as written in the record. */
export const ROW_SELECTORS: readonly string[] = record.rowRanges.flatMap((r) => r.rows);
