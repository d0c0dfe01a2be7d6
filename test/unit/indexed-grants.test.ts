import { describe, expect, it } from 'vitest';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import { createDirectory } from '../../src/principals/directory.js';
import { RESOURCE_KINDS } from '../../src/resources/kinds.js';
import { BY_RANK } from '../../src/resources/permissions.js';
import { freshStore } from '../helpers/test-store.js';

// The index loads grants as numbers (kind and level by position, the grantee signed); on either engine.
describe('grants as the policy index reads them', () => {
  it('gives kind, level and grantee as numbers that name them, a page at a time and for one resource', async () => {
    const { sql, close } = await freshStore();
    try {
      const dir = createDirectory(sql);
      const grants = createGrantsRepo(sql);
      const ann = await dir.createUser({ username: 'ann', displayName: 'Ann', isAdmin: false, isServiceAccount: false });
      const team = await dir.createGroup('team');
      await grants.insert({ type: 'user', id: ann.id }, 'experiment', '1', 'READ');
      await grants.insert({ type: 'group', id: team.id }, 'experiment', '1', 'MANAGE');
      await grants.insert({ type: 'user', id: ann.id }, 'prompt', 'p', 'NO_PERMISSIONS');
      const named = (r: { kind: number | null; resource_id: string; grantee: number; grant_rank: number | null }) => ({
        kind: RESOURCE_KINDS[r.kind!],
        id: r.resource_id,
        grantee: r.grantee,
        level: BY_RANK[r.grant_rank!],
      });
      const rows = [];
      for await (const page of grants.pages()) rows.push(...page.map(named));
      expect(rows).toEqual([
        { kind: 'experiment', id: '1', grantee: ann.id, level: 'READ' },
        { kind: 'experiment', id: '1', grantee: -team.id, level: 'MANAGE' },
        { kind: 'prompt', id: 'p', grantee: ann.id, level: 'NO_PERMISSIONS' },
      ]);
      expect((await grants.onResourceIndexed('experiment', '1')).map(named).sort((a, b) => a.grantee - b.grantee)).toEqual([
        { kind: 'experiment', id: '1', grantee: -team.id, level: 'MANAGE' },
        { kind: 'experiment', id: '1', grantee: ann.id, level: 'READ' },
      ]);
    } finally {
      await close();
    }
  });

  it('leaves out a grant of a kind or level this version does not know, and keeps the rest', async () => {
    const { sql, close } = await freshStore();
    try {
      const grants = createGrantsRepo(sql);
      const experiment = RESOURCE_KINDS.indexOf('experiment');
      async function* pages() {
        yield [
          { kind: null, resource_id: '1', grantee: 5, grant_rank: BY_RANK.indexOf('MANAGE') },
          { kind: experiment, resource_id: '1', grantee: 6, grant_rank: null },
          { kind: experiment, resource_id: '1', grantee: 7, grant_rank: BY_RANK.indexOf('EDIT') },
        ];
      }
      const policy = createPolicyReader({ ...grants, pages });
      await policy.reloadAll();
      expect(policy.resources).toBe(1);
      expect(policy.factsFor({ userId: 5, groupIds: [] }, { kind: 'experiment', id: '1' }).direct).toBeUndefined();
      expect(policy.factsFor({ userId: 6, groupIds: [] }, { kind: 'experiment', id: '1' }).direct).toBeUndefined();
      expect(policy.factsFor({ userId: 7, groupIds: [] }, { kind: 'experiment', id: '1' }).direct).toBe('EDIT');
    } finally {
      await close();
    }
  });
});
