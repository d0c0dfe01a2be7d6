import { describe, expect, it } from 'vitest';
import type { AdminDeps, AdminRoute } from '../../src/admin/types.js';
import { UI_RESOURCE_ROUTES } from '../../src/admin/ui-resources.js';
import { effectiveOn } from '../../src/authz/effective.js';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Principal } from '../../src/principals/types.js';
import { openSqliteStore } from '../../src/store/database.js';
import type { Sql } from '../../src/store/sql.js';

/**
 * The Manage screens' effective list reads a resource's concerned users and their groups in a
 * fixed number of statements and decides each from the in-memory policy index (issue 33): never
 * a statement per user or per group.
 */
const ADMIN: Principal = { userId: 0, username: 'root', isAdmin: true, isServiceAccount: false, groupIds: [], via: 'basic' };

function counting(sql: Sql) {
  const counter = { statements: 0 };
  const counted: Sql = {
    ...sql,
    dialect: sql.dialect,
    get: (text, params) => (counter.statements++, sql.get(text, params)),
    all: (text, params) => (counter.statements++, sql.all(text, params)),
    run: (text, params) => (counter.statements++, sql.run(text, params)),
    transaction: (fn) => sql.transaction(fn),
  };
  return { counted, counter };
}

/** An experiment with `grantees` users concerned (half by a grant of their own, half through one of two groups). */
async function effectiveList(grantees: number) {
  const raw = openSqliteStore(':memory:');
  const { counted, counter } = counting(raw);
  const directory = createDirectory(counted);
  const grants = createGrantsRepo(counted);
  const [readers, blocked] = [await directory.createGroup('readers'), await directory.createGroup('blocked')];
  await grants.insert({ type: 'group', id: readers.id }, 'experiment', '7', 'EDIT');
  await grants.insert({ type: 'group', id: blocked.id }, 'experiment', '7', 'NO_PERMISSIONS');
  for (let i = 0; i < grantees; i++) {
    const u = await directory.createUser({ username: `u${String(i).padStart(3, '0')}`, displayName: '', isAdmin: false, isServiceAccount: false });
    if (i % 2 === 0) await grants.insert({ type: 'user', id: u.id }, 'experiment', '7', 'READ');
    else await directory.addMember(i % 4 === 1 ? readers.id : blocked.id, u.id);
  }
  const policy = createPolicyReader(grants);
  await policy.reloadAll();
  const deps = { sql: counted, directory, grants, effectiveOn: async (who, ref) => effectiveOn(policy, who, ref, 'READ') } as Partial<AdminDeps> as AdminDeps;
  const route = UI_RESOURCE_ROUTES.find((r) => r.path === '/mlflow/permissions/ui/experiments/:experiment_id/effective') as AdminRoute;
  counter.statements = 0;
  const query = new URLSearchParams({ max_results: '200' });
  const answer = (await route.handler({ principal: ADMIN, params: { experiment_id: '7' }, query, body: undefined }, deps)).body as {
    users: Array<{ username: string; permission: string; source: string; groups: string[] }>;
  };
  await raw.close();
  return { statements: counter.statements, users: answer.users };
}

describe("the Manage screens' effective list", () => {
  it('takes the same few statements for 4 concerned users as for 60, each decided by the gate’s rule', async () => {
    const few = await effectiveList(4);
    const many = await effectiveList(60);
    expect(many.users).toHaveLength(60);
    expect(many.users.slice(0, 4)).toEqual([
      { username: 'u000', is_admin: false, is_service_account: false, permission: 'READ', source: 'direct', groups: [] },
      { username: 'u001', is_admin: false, is_service_account: false, permission: 'EDIT', source: 'group', groups: ['readers'] },
      { username: 'u002', is_admin: false, is_service_account: false, permission: 'READ', source: 'direct', groups: [] },
      { username: 'u003', is_admin: false, is_service_account: false, permission: 'NO_PERMISSIONS', source: 'group', groups: ['blocked'] },
    ]);
    expect(many.statements).toBe(few.statements);
    expect(many.statements).toBeLessThanOrEqual(2);
  });
});
