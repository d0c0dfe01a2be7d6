import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createPatternGrantsRepo, type PatternGrantsRepo } from '../../src/authz/pattern-grants-repo.js';
import { FlowgateError } from '../../src/errors.js';
import type { Sql } from '../../src/store/sql.js';
import { freshStore } from '../helpers/test-store.js';

const alice = { type: 'user', id: 1 } as const;
const bob = { type: 'user', id: 2 } as const;
const teamA = { type: 'group', id: 1 } as const;

let store: Sql;
let closeStore: () => Promise<void>;
let repo: PatternGrantsRepo;
let clock: number;

const generation = async () => (await store.get<{ value: number }>('SELECT value FROM policy_generation'))!.value;

beforeEach(async () => {
  ({ sql: store, close: closeStore } = await freshStore());
  clock = 1000;
  repo = createPatternGrantsRepo(store, () => clock);
  await store.run("INSERT INTO users (username, display_name, created_at) VALUES ('alice', 'Alice', 0), ('bob', 'Bob', 0)");
  await store.run("INSERT INTO groups (name, created_at) VALUES ('team-a', 0)");
});
afterEach(async () => {
  await closeStore();
});

describe('pattern grants repository', () => {
  it('stores, lists and reads back grants per grantee and kind', async () => {
    expect(await repo.upsert(alice, 'experiment', 'team-a/*', 'EDIT')).toBe(true);
    expect(await repo.upsert(teamA, 'experiment', 'team-a/*', 'READ')).toBe(true);
    expect(await repo.upsert(bob, 'registered_model', 'churn-*', 'MANAGE')).toBe(true);
    expect(await repo.upsert(alice, 'experiment', 'shared-?', 'NO_PERMISSIONS')).toBe(true);

    expect(await repo.all()).toEqual([
      { kind: 'experiment', pattern: 'shared-?', grantee: alice, permission: 'NO_PERMISSIONS' },
      { kind: 'experiment', pattern: 'team-a/*', grantee: alice, permission: 'EDIT' },
      { kind: 'experiment', pattern: 'team-a/*', grantee: teamA, permission: 'READ' },
      { kind: 'registered_model', pattern: 'churn-*', grantee: bob, permission: 'MANAGE' },
    ]);
    expect(await repo.list('registered_model')).toEqual([{ kind: 'registered_model', pattern: 'churn-*', grantee: bob, permission: 'MANAGE' }]);
    expect(await repo.list('prompt')).toEqual([]);
    expect(await repo.ofGrantee(alice)).toEqual([
      { kind: 'experiment', pattern: 'shared-?', permission: 'NO_PERMISSIONS' },
      { kind: 'experiment', pattern: 'team-a/*', permission: 'EDIT' },
    ]);
    expect(await repo.ofGrantee(teamA)).toEqual([{ kind: 'experiment', pattern: 'team-a/*', permission: 'READ' }]);
  });

  it('upsert changes the permission in place, and reports when nothing changed', async () => {
    await repo.upsert(alice, 'experiment', 'team-a/*', 'READ');
    clock = 2000;
    expect(await repo.upsert(alice, 'experiment', 'team-a/*', 'MANAGE')).toBe(true);
    clock = 3000;
    expect(await repo.upsert(alice, 'experiment', 'team-a/*', 'MANAGE')).toBe(false);
    const rows = await store.all('SELECT permission, created_at, updated_at FROM pattern_grants');
    expect(rows).toEqual([{ permission: 'MANAGE', created_at: 1000, updated_at: 2000 }]);
  });

  it('keeps a user grant and a group grant with the same ids apart', async () => {
    await repo.upsert(alice, 'experiment', 'x*', 'READ');
    await repo.upsert(teamA, 'experiment', 'x*', 'EDIT');
    expect(await repo.ofGrantee(alice)).toEqual([{ kind: 'experiment', pattern: 'x*', permission: 'READ' }]);
    expect(await repo.ofGrantee(teamA)).toEqual([{ kind: 'experiment', pattern: 'x*', permission: 'EDIT' }]);
    expect(await repo.delete(teamA, 'experiment', 'x*')).toBe(true);
    expect(await repo.all()).toEqual([{ kind: 'experiment', pattern: 'x*', grantee: alice, permission: 'READ' }]);
  });

  it('deletes one grant, and says when there was none', async () => {
    await repo.upsert(alice, 'experiment', 'team-a/*', 'READ');
    await repo.upsert(alice, 'prompt', 'team-a/*', 'READ');
    expect(await repo.delete(alice, 'experiment', 'team-a/*')).toBe(true);
    expect(await repo.delete(alice, 'experiment', 'team-a/*')).toBe(false);
    expect(await repo.all()).toEqual([{ kind: 'prompt', pattern: 'team-a/*', grantee: alice, permission: 'READ' }]);
  });

  it('refuses a pattern without a wildcard, as a client error', async () => {
    const refused = repo.upsert(alice, 'experiment', 'team-a/churn', 'READ');
    await expect(refused).rejects.toThrow(FlowgateError);
    await expect(repo.upsert(alice, 'experiment', 'team-a/churn', 'READ')).rejects.toThrow(/no wildcard/);
    expect(await repo.all()).toEqual([]);
  });

  it('lists grants with their grantees\' names, of every kind or of one', async () => {
    await repo.upsert(alice, 'experiment', 'a*', 'READ');
    await repo.upsert(teamA, 'experiment', 'a*', 'EDIT');
    await repo.upsert(bob, 'registered_model', 'm-*', 'MANAGE');
    const names = (gs: Awaited<ReturnType<PatternGrantsRepo['named']>>) => gs.map((g) => [g.kind, g.pattern, g.grantee.type, g.granteeName, g.permission]);
    expect(names(await repo.named())).toEqual([
      ['experiment', 'a*', 'user', 'alice', 'READ'],
      ['experiment', 'a*', 'group', 'team-a', 'EDIT'],
      ['registered_model', 'm-*', 'user', 'bob', 'MANAGE'],
    ]);
    expect(names(await repo.named('registered_model'))).toEqual([['registered_model', 'm-*', 'user', 'bob', 'MANAGE']]);
  });

  it('goes with its grantee when the user or group is deleted', async () => {
    await repo.upsert(alice, 'experiment', 'a*', 'READ');
    await repo.upsert(teamA, 'experiment', 'b*', 'READ');
    await repo.upsert(bob, 'experiment', 'c*', 'READ');
    await store.run('DELETE FROM users WHERE id = 1');
    await store.run('DELETE FROM groups WHERE id = 1');
    expect((await repo.all()).map((g) => g.pattern)).toEqual(['c*']);
  });

  it('bumps the policy generation on every change, so other flowgates reload', async () => {
    const g0 = await generation();
    await repo.upsert(alice, 'experiment', 'a*', 'READ');
    const g1 = await generation();
    expect(g1).toBeGreaterThan(g0);
    await repo.upsert(alice, 'experiment', 'a*', 'EDIT');
    const g2 = await generation();
    expect(g2).toBeGreaterThan(g1);
    await repo.delete(alice, 'experiment', 'a*');
    expect(await generation()).toBeGreaterThan(g2);
  });

  it('enforces the table rules even for writes that bypass the repository', async () => {
    const insert = 'INSERT INTO pattern_grants (resource_kind, pattern, user_id, group_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)';
    // Wrapped: the SQLite store may throw before it returns a promise.
    const attempt = (params: (string | number | null)[]) => (async () => store.run(insert, params))();
    // Kinds and levels are the registry's (store/vocabulary.ts), held by foreign keys.
    await expect(attempt(['run', 'a*', 1, null, 'READ'])).rejects.toThrow(/foreign key/i);
    await expect(attempt(['experiment', 'a*', 1, null, 'WRITE'])).rejects.toThrow(/foreign key/i);
    await expect(attempt(['experiment', 'a*', null, null, 'READ'])).rejects.toThrow(/check constraint/i);
    await expect(attempt(['experiment', 'a*', 1, 1, 'READ'])).rejects.toThrow(/check constraint/i);
    await expect(attempt(['experiment', '', 1, null, 'READ'])).rejects.toThrow(/check constraint/i);
    await expect(attempt(['experiment', 'x'.repeat(257), 1, null, 'READ'])).rejects.toThrow(/check constraint/i);
    await expect(attempt(['experiment', 'a*', 99, null, 'READ'])).rejects.toThrow(/foreign key/i);
    await attempt(['experiment', 'a*', 1, null, 'READ']);
    // A unique violation reaches callers as MLflow's RESOURCE_ALREADY_EXISTS (store-errors.ts), on both stores.
    await expect(attempt(['experiment', 'a*', 1, null, 'EDIT'])).rejects.toMatchObject({ code: 'RESOURCE_ALREADY_EXISTS' });
  });
});
