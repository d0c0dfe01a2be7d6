import { beforeAll, describe, expect, it } from 'vitest';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import type { ResourceKind } from '../../src/authz/types.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Group, User } from '../../src/principals/types.js';
import { openSqliteStore } from '../../src/store/database.js';

describe('policy facts from the store', () => {
  const sql = openSqliteStore(':memory:');
  const dir = createDirectory(sql);
  const grants = createGrantsRepo(sql);
  let alice: User, bob: User, g1: Group, g2: Group, g3: Group;

  beforeAll(async () => {
    alice = await dir.createUser({ username: 'alice', displayName: 'a', isAdmin: false, isServiceAccount: false });
    bob = await dir.createUser({ username: 'bob', displayName: 'b', isAdmin: false, isServiceAccount: false });
    g1 = await dir.createGroup('g1');
    g2 = await dir.createGroup('g2');
    g3 = await dir.createGroup('g3');
    await dir.addMember(g1.id, alice.id);
    await dir.addMember(g2.id, alice.id);
    await dir.addMember(g3.id, bob.id);
    await grants.insert({ type: 'group', id: g1.id }, 'experiment', '1', 'READ');
    await grants.insert({ type: 'group', id: g2.id }, 'experiment', '1', 'EDIT');
    await grants.insert({ type: 'group', id: g3.id }, 'experiment', '1', 'MANAGE');
    await grants.insert({ type: 'user', id: bob.id }, 'experiment', '1', 'NO_PERMISSIONS');
    await grants.insert({ type: 'user', id: alice.id }, 'experiment', '2', 'READ');
    await grants.insert({ type: 'user', id: alice.id }, 'registered_model', '1', 'MANAGE');
  });

  it('gathers the direct grant and only the caller’s groups, for the exact resource', async () => {
    const policy = createPolicyReader(grants);
    await policy.reloadAll();
    const a = { userId: alice.id, groupIds: [g1.id, g2.id] };
    const b = { userId: bob.id, groupIds: [g3.id] };
    expect(policy.factsFor(a, { kind: 'experiment', id: '1' }).direct).toBeUndefined();
    expect(policy.factsFor(a, { kind: 'experiment', id: '1' }).groups.slice().sort()).toEqual(['EDIT', 'READ']);
    expect(policy.factsFor(b, { kind: 'experiment', id: '1' })).toEqual({ direct: 'NO_PERMISSIONS', groups: ['MANAGE'] });
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' })).toEqual({ direct: 'READ', groups: [] });
    expect(policy.factsFor(a, { kind: 'prompt', id: '1' })).toEqual({ direct: undefined, groups: [] });
    expect(policy.factsFor(a, { kind: 'registered_model', id: '1' }).direct).toBe('MANAGE');
  });

  it('serves from memory; a changed resource is re-read, a full reload after deletions', async () => {
    const policy = createPolicyReader(grants);
    await policy.reloadAll();
    const a = { userId: alice.id, groupIds: [g1.id, g2.id] };
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' }).direct).toBe('READ');
    expect(policy.factsFor(a, { kind: 'experiment', id: '1' }).groups.slice().sort()).toEqual(['EDIT', 'READ']);
    // group membership comes from the caller, not the index
    expect(policy.factsFor({ userId: alice.id, groupIds: [g3.id] }, { kind: 'experiment', id: '1' }).groups).toEqual(['MANAGE']);
    await grants.update({ type: 'user', id: alice.id }, 'experiment', '2', 'EDIT');
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' }).direct).toBe('READ');
    await policy.changed([{ kind: 'experiment', id: '2' }]);
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' }).direct).toBe('EDIT');
    await grants.delete({ type: 'user', id: alice.id }, 'experiment', '2');
    await policy.changed([{ kind: 'experiment', id: '2' }]);
    expect(policy.factsFor(a, { kind: 'experiment', id: '2' })).toEqual({ direct: undefined, groups: [] });
    await dir.deleteUser(bob.id);
    await policy.reloadAll();
    expect(policy.factsFor({ userId: bob.id, groupIds: [] }, { kind: 'experiment', id: '1' }).direct).toBeUndefined();
  });

  it('keeps a resource re-read while a full reload was reading', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holding = false;
    // A slow full read (a big store, a remote one): its rows are read before the change below.
    async function* slowPages() {
      const rows = [];
      for await (const page of grants.pages()) rows.push(...page);
      if (holding) await held;
      yield rows;
    }
    const policy = createPolicyReader({ ...grants, pages: slowPages });
    await policy.reloadAll();
    const a = { userId: alice.id, groupIds: [] };
    await grants.insert({ type: 'user', id: alice.id }, 'experiment', '3', 'READ');
    holding = true;
    const reload = policy.reloadAll();
    await grants.update({ type: 'user', id: alice.id }, 'experiment', '3', 'MANAGE');
    await policy.changed([{ kind: 'experiment', id: '3' }]);
    release();
    await reload;
    expect(policy.factsFor(a, { kind: 'experiment', id: '3' }).direct).toBe('MANAGE');
  });

  it('keeps the re-read started last when two of one resource answer out of order', async () => {
    const ref = { kind: 'experiment', id: '4' } as const;
    const a = { userId: alice.id, groupIds: [] };
    let releaseFirst!: () => void;
    const firstHeld = new Promise<void>((r) => (releaseFirst = r));
    let reads = 0;
    // The first re-read is slow (a busy pool connection) and answers after the second.
    const onResourceIndexed = async (kind: ResourceKind, id: string) => {
      const n = ++reads;
      const rows = await grants.onResourceIndexed(kind, id);
      if (n === 1) await firstHeld;
      return rows;
    };
    const policy = createPolicyReader({ ...grants, onResourceIndexed });
    await policy.reloadAll();
    await grants.insert({ type: 'user', id: alice.id }, 'experiment', '4', 'READ');
    const first = policy.changed([ref]);
    await new Promise((r) => setTimeout(r, 5));
    await grants.delete({ type: 'user', id: alice.id }, 'experiment', '4');
    await policy.changed([ref]);
    releaseFirst();
    await first;
    expect(policy.factsFor(a, ref).direct).toBeUndefined();
  });

  it('a re-read overtaken by a later one resolves only when the later one has landed', async () => {
    const ref = { kind: 'experiment', id: '5' } as const;
    const a = { userId: alice.id, groupIds: [] };
    let releaseSecond!: () => void;
    const secondHeld = new Promise<void>((r) => (releaseSecond = r));
    let reads = 0;
    const onResourceIndexed = async (kind: ResourceKind, id: string) => {
      const n = ++reads;
      const rows = await grants.onResourceIndexed(kind, id);
      if (n === 2) await secondHeld;
      return rows;
    };
    const policy = createPolicyReader({ ...grants, onResourceIndexed });
    await policy.reloadAll();
    await grants.insert({ type: 'user', id: alice.id }, 'experiment', '5', 'EDIT');
    // The writer's own re-read, then one a notification started: the writer's answers first.
    const writers = policy.changed([ref]);
    const notified = policy.changed([ref]);
    const first = await Promise.race([writers.then(() => 'landed'), new Promise((r) => setTimeout(() => r('waiting'), 30))]);
    expect(first).toBe('waiting');
    releaseSecond();
    await writers;
    expect(policy.factsFor(a, ref).direct).toBe('EDIT');
    await notified;
  });
});
