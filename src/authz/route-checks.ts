import type { AlsoCheck, FieldGuard, QueueRule, RouteEntry } from './types.js';

/**
 * One check a catalog row declares beyond the route's own (`main`). The catalog keeps its row-level
 * fields (`guards`, `renames`, …) as sugar; `routeChecks` compiles them into this list, which is the
 * one answer to "what does this row check": the evaluator runs it, the route plan reads the body for it.
 */
export type RouteCheck =
  | { readonly check: 'guard'; readonly guard: FieldGuard }
  | { readonly check: 'rename'; readonly field: string }
  | { readonly check: 'kind'; readonly field: string }
  | { readonly check: 'also'; readonly also: AlsoCheck }
  | { readonly check: 'queue'; readonly rule: QueueRule }
  | { readonly check: 'source' }
  | { readonly check: 'graphql-field' }
  | { readonly check: 'job-starter'; readonly field: string };

/** Every check one request goes through; the verdict names the one that decided. */
export type CheckName = 'main' | RouteCheck['check'];

type OptionalField = { [K in keyof RouteEntry]-?: undefined extends RouteEntry[K] ? K : never }[keyof RouteEntry];

/**
 * What each optional field of a row compiles to, in the order the checks run. Every optional field of
 * RouteEntry must be here, so a new one is a compile error until it says which checks it makes
 * (`after` makes one only for GraphQL: the other hooks run once MLflow has answered).
 */
const COMPILE: { readonly [F in OptionalField]: (entry: RouteEntry) => readonly RouteCheck[] } = {
  guards: (e) => (e.guards ?? []).map((guard) => ({ check: 'guard', guard })),
  renames: (e) => (e.renames === undefined ? [] : [{ check: 'rename', field: e.renames }]),
  kindTag: (e) => (e.kindTag === undefined ? [] : [{ check: 'kind', field: e.kindTag }]),
  also: (e) => (e.also ?? []).map((also) => ({ check: 'also', also })),
  queueRule: (e) => (e.queueRule === undefined ? [] : [{ check: 'queue', rule: e.queueRule }]),
  alsoReads: (e) => (e.alsoReads === 'model_version_source' ? [{ check: 'source' }] : []),
  after: (e) => (e.after === 'graphql' ? [{ check: 'graphql-field' }] : []),
  // Part of the route's own check (create for what is missing, `need` for the rest).
  createsMissing: () => [],
  startedJob: (e) => (e.startedJob === undefined ? [] : [{ check: 'job-starter', field: e.startedJob }]),
};

const compiled = new WeakMap<RouteEntry, readonly RouteCheck[]>();

/** The further checks of a row, compiled once per row (catalog rows live as long as the process). */
export function routeChecks(entry: RouteEntry): readonly RouteCheck[] {
  let checks = compiled.get(entry);
  if (checks === undefined) {
    checks = Object.freeze(Object.values(COMPILE).flatMap((compile) => compile(entry)));
    compiled.set(entry, checks);
  }
  return checks;
}
