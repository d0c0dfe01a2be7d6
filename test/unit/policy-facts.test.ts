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
    expect(grants.factsOfUser(alice.id, 'experiment', '1')).toEqual({ direct: undefined, groups: expect.arrayContaining(['READ', 'EDIT']) });
    expect(grants.factsOfUser(alice.id, 'experiment', '1').groups).toHaveLength(2);
    expect(grants.factsOfUser(bob.id, 'experiment', '1')).toEqual({ direct: 'NO_PERMISSIONS', groups: ['MANAGE'] });
    expect(grants.factsOfUser(alice.id, 'experiment', '2')).toEqual({ direct: 'READ', groups: [] });
    expect(grants.factsOfUser(alice.id, 'prompt', '1')).toEqual({ direct: undefined, groups: [] });
  });

  it('caches until invalidated', () => {
    const policy = createPolicyReader(grants, 100);
    expect(policy.factsFor(alice.id, { kind: 'experiment', id: '2' }).direct).toBe('READ');
    grants.update({ type: 'user', id: alice.id }, 'experiment', '2', 'EDIT');
    expect(policy.factsFor(alice.id, { kind: 'experiment', id: '2' }).direct).toBe('READ');
    policy.invalidate();
    expect(policy.factsFor(alice.id, { kind: 'experiment', id: '2' }).direct).toBe('EDIT');
  });
});
