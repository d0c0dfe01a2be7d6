import { describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { routeChecks, type RouteCheck } from '../../src/authz/route-checks.js';
import type { RouteEntry } from '../../src/authz/types.js';
import { compileRoutePlans } from '../../src/proxy/route-plan.js';

/*
 * A catalog row's further checks are one compiled list (routeChecks): the evaluator runs it and the
 * route plan decides from it whether a non-administrator's request needs its body and a full
 * evaluation. Before, the plan kept its own list, which left out renames and the prompt-flag check.
 */

const planOf = compileRoutePlans(ROUTE_CATALOG);

/** Each optional check field of a row, and the check it must compile to. */
const FIELD_CHECK: Record<string, (row: RouteEntry) => boolean> = {
  guard: (row) => row.guards !== undefined && row.guards.length > 0,
  rename: (row) => row.renames !== undefined,
  kind: (row) => row.kindTag !== undefined,
  also: (row) => row.also !== undefined && row.also.length > 0,
  queue: (row) => row.queueRule !== undefined,
  source: (row) => row.alsoReads !== undefined,
  'graphql-field': (row) => row.after === 'graphql',
  'job-starter': (row) => row.startedJob !== undefined,
} satisfies Record<RouteCheck['check'], (row: RouteEntry) => boolean>;

const rowName = (row: RouteEntry) => `${row.method} ${row.pattern}`;

describe('route checks', () => {
  it('every row compiles each of its check fields into its list, and nothing else', () => {
    for (const row of ROUTE_CATALOG) {
      const compiled = new Set(routeChecks(row).map((c) => c.check));
      const declared = new Set(Object.keys(FIELD_CHECK).filter((check) => FIELD_CHECK[check]!(row)));
      expect(compiled, rowName(row)).toEqual(declared);
    }
  });

  it("every row's plan runs the evaluator's list for non-administrators and none of it for administrators", () => {
    for (const row of ROUTE_CATALOG) {
      const plan = planOf(row);
      expect(plan.user.checks, rowName(row)).toBe(routeChecks(row));
      expect(plan.admin.checks, rowName(row)).toEqual([]);
      if (plan.user.checks.length > 0) {
        expect(plan.user.immediate, rowName(row)).toBe(false);
        if (row.method !== 'GET') expect(plan.user.readsBody, rowName(row)).toBe(true);
      }
    }
  });

  it('renames and prompt-flag changes are further checks of the plan, as the evaluator runs them', () => {
    const rows = ROUTE_CATALOG.filter((row) => row.renames !== undefined || row.kindTag !== undefined);
    expect(rows.map((row) => row.pattern)).toEqual(
      expect.arrayContaining(['/api/2.0/mlflow/experiments/update', '/api/2.0/mlflow/registered-models/rename', '/api/2.0/mlflow/registered-models/set-tag', '/api/2.0/mlflow/registered-models/delete-tag']),
    );
    for (const row of rows) expect(planOf(row).user.checks.map((c) => c.check), rowName(row)).toEqual(expect.arrayContaining([row.renames ? 'rename' : 'kind']));
  });

  it('runs the checks in one order: guards, rename, prompt flag, further ids, queue, source, GraphQL fields', () => {
    const order: RouteCheck['check'][] = ['guard', 'rename', 'kind', 'also', 'queue', 'source', 'graphql-field'];
    for (const row of ROUTE_CATALOG) {
      const ranks = routeChecks(row).map((c) => order.indexOf(c.check));
      expect(ranks, rowName(row)).toEqual([...ranks].sort((a, b) => a - b));
    }
    const everything: RouteEntry = {
      method: 'POST',
      pattern: '/x',
      resource: 'experiment',
      id: { kind: 'experiment_id', field: 'experiment_id', from: 'auto' },
      need: 'edit',
      after: 'graphql',
      alsoReads: 'model_version_source',
      queueRule: 'member',
      also: [{ id: { kind: 'run_id', field: 'run_id', from: 'auto' }, need: 'read' }],
      guards: [{ kind: 'admin_only', field: 'artifact_location' }],
      renames: 'new_name',
      kindTag: 'key',
    };
    expect(routeChecks(everything).map((c) => c.check)).toEqual(order);
  });
});
