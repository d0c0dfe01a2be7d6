import { describe, expect, it } from 'vitest';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import { createDirectory } from '../../src/principals/directory.js';
import { openSqliteStore } from '../../src/store/database.js';

describe('the grants repository', () => {
  it("moves a model's grants to its new name; a grantee holding both keeps the moved grant", async () => {
    const sql = openSqliteStore(':memory:');
    const dir = createDirectory(sql);
    const grants = createGrantsRepo(sql);
    const ann = await dir.createUser({ username: 'ann', displayName: 'Ann', isAdmin: false, isServiceAccount: false });
    const ben = await dir.createUser({ username: 'ben', displayName: 'Ben', isAdmin: false, isServiceAccount: false });
    const team = await dir.createGroup('team');
    await grants.insert({ type: 'user', id: ann.id }, 'registered_model', 'old', 'MANAGE');
    await grants.insert({ type: 'group', id: team.id }, 'registered_model', 'old', 'READ');
    await grants.insert({ type: 'user', id: ann.id }, 'registered_model', 'new', 'READ');
    await grants.insert({ type: 'group', id: team.id }, 'registered_model', 'new', 'EDIT');
    await grants.insert({ type: 'user', id: ben.id }, 'registered_model', 'new', 'EDIT');
    await grants.insert({ type: 'user', id: ben.id }, 'prompt', 'old', 'READ');

    const moved = await sql.transaction(() => grants.moveResource('registered_model', 'old', 'new'));

    expect(moved).toBe(2);
    expect(await grants.onResourceIndexed('registered_model', 'old')).toEqual([]);
    expect(await grants.get({ type: 'user', id: ann.id }, 'registered_model', 'new')).toBe('MANAGE');
    expect(await grants.get({ type: 'group', id: team.id }, 'registered_model', 'new')).toBe('READ');
    // Grants the move does not collide with, and other kinds, stay as they were.
    expect(await grants.get({ type: 'user', id: ben.id }, 'registered_model', 'new')).toBe('EDIT');
    expect(await grants.get({ type: 'user', id: ben.id }, 'prompt', 'old')).toBe('READ');
    expect(await grants.count()).toBe(4);
    await sql.close();
  });

  it('searches grantee names in any case, users before groups, a page at a time', async () => {
    const sql = openSqliteStore(':memory:');
    const dir = createDirectory(sql);
    const grants = createGrantsRepo(sql);
    const ann = await dir.createUser({ username: 'Ann', displayName: 'Ann', isAdmin: false, isServiceAccount: false });
    const bot = await dir.createUser({ username: 'annbot', displayName: 'Bot', isAdmin: false, isServiceAccount: true });
    const team = await dir.createGroup('anne-team');
    await dir.addMember(team.id, ann.id);
    for (const [grantee, p] of [
      [{ type: 'user', id: ann.id }, 'READ'],
      [{ type: 'user', id: bot.id }, 'EDIT'],
      [{ type: 'group', id: team.id }, 'MANAGE'],
    ] as const)
      await grants.insert(grantee, 'experiment', '7', p);

    expect(await grants.searchOnResource('experiment', '7', 'ANN', 10, 0)).toEqual([
      { grantee_type: 'user', name: 'Ann', permission: 'READ' },
      { grantee_type: 'service_account', name: 'annbot', permission: 'EDIT' },
      { grantee_type: 'group', name: 'anne-team', permission: 'MANAGE' },
    ]);
    expect(await grants.searchOnResource('experiment', '7', 'ann', 1, 2)).toEqual([{ grantee_type: 'group', name: 'anne-team', permission: 'MANAGE' }]);
    expect((await grants.concernedUsers('experiment', '7', '', 10, 0)).map((u) => u.id)).toEqual([ann.id, bot.id]);
    expect((await grants.concernedUsers('experiment', '7', 'BOT', 10, 0)).map((u) => u.id)).toEqual([bot.id]);
    // Each with all their groups, read in the same statement.
    expect((await grants.concernedUsers('experiment', '7', '', 10, 0)).map((u) => u.groups)).toEqual([[{ id: team.id, name: 'anne-team' }], []]);
    await sql.close();
  });

  it('reads every grant a page at a time, in id order, none twice, the last page short', async () => {
    const sql = openSqliteStore(':memory:');
    const dir = createDirectory(sql);
    const grants = createGrantsRepo(sql);
    const ann = await dir.createUser({ username: 'ann', displayName: 'Ann', isAdmin: false, isServiceAccount: false });
    for (let i = 0; i < 12; i++) await grants.insert({ type: 'user', id: ann.id }, 'experiment', String(i), 'READ');
    const sizes: number[] = [];
    const ids: string[] = [];
    for await (const page of grants.pages(5)) {
      sizes.push(page.length);
      ids.push(...page.map((g) => g.resource_id));
    }
    expect(sizes).toEqual([5, 5, 2]);
    expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => String(i)));
    await sql.close();
  });
});
