import { describe, expect, it } from 'vitest';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import { createDirectory } from '../../src/principals/directory.js';
import { openDatabase } from '../../src/store/database.js';

describe('policy facts from the store', () => {
  const db = openDatabase(':memory:');
  const dir = createDirectory(db);
  const grants = createGrantsRepo(db);
  const alice = dir.createUser({ username: 'alice', displayName: 'a', isAdmin: false, isServiceAccount: false });
  const bob = dir.createUser({ username: 'bob', displayName: 'b', isAdmin: false, isServiceAccount: false });
  const g1 = dir.createGroup('g1');
  const g2 = dir.createGroup('g2');
  const g3 = dir.createGroup('g3');
  dir.addMember(g1.id, alice.id);
  dir.addMember(g2.id, alice.id);
  dir.addMember(g3.id, bob.id);
  grants.insert({ type: 'group', id: g1.id }, 'experiment', '1', 'READ');
  grants.insert({ type: 'group', id: g2.id }, 'experiment', '1', 'EDIT');
  grants.insert({ type: 'group', id: g3.id }, 'experiment', '1', 'MANAGE');
  grants.insert({ type: 'user', id: bob.id }, 'experiment', '1', 'NO_PERMISSIONS');
  grants.insert({ type: 'user', id: alice.id }, 'experiment', '2', 'READ');
  grants.insert({ type: 'user', id: alice.id }, 'registered_model', '1', 'MANAGE');

  it('gathers the direct grant and only the caller’s groups, for the exact resource', () => {
    const policy = createPolicyReader(grants);
    const a = { userId: alice.id, groupIds: [g1.id, g2.id] };
    const b = { userId: bob.id, groupIds: [g3.id] };
    expect(policy.factsFor(a, { kind: 'experiment', id: '1' }).direct).toBeUndefined();
    expect(policy.factsFor(a, { kind: 'experiment', id: '1' }).groups.slice().sort()).toEqual(['EDIT', 'READ']);
    expect(policy.factsFor(b, { kind: 'experiment', id: '1' })).toEqual({ direct: 'NO_PERMISSIONS', groups: ['MANAGE'] });
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' })).toEqual({ direct: 'READ', groups: [] });
    expect(policy.factsFor(a, { kind: 'prompt', id: '1' })).toEqual({ direct: undefined, groups: [] });
    expect(policy.factsFor(a, { kind: 'registered_model', id: '1' }).direct).toBe('MANAGE');
  });

  it('serves from memory; a changed resource is re-read, a full reload after deletions', () => {
    const policy = createPolicyReader(grants);
    const a = { userId: alice.id, groupIds: [g1.id, g2.id] };
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' }).direct).toBe('READ');
    expect(policy.factsFor(a, { kind: 'experiment', id: '1' }).groups.slice().sort()).toEqual(['EDIT', 'READ']);
    // group membership comes from the caller, not the index
    expect(policy.factsFor({ userId: alice.id, groupIds: [g3.id] }, { kind: 'experiment', id: '1' }).groups).toEqual(['MANAGE']);
    grants.update({ type: 'user', id: alice.id }, 'experiment', '2', 'EDIT');
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' }).direct).toBe('READ');
    policy.changed({ kind: 'experiment', id: '2' });
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' }).direct).toBe('EDIT');
    grants.delete({ type: 'user', id: alice.id }, 'experiment', '2');
    policy.changed({ kind: 'experiment', id: '2' });
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' })).toEqual({ direct: undefined, groups: [] });
    dir.deleteUser(bob.id);
    policy.reloadAll();
    expect(policy.factsFor({ userId: bob.id, groupIds: [] }, { kind: 'experiment', id: '1' }).direct).toBeUndefined();
  });
});
