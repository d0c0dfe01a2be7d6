import type { Db } from '../store/database.js';
import type { Group, User } from './types.js';

interface UserRow {
  id: number;
  username: string;
  display_name: string;
  is_admin: number;
  is_service_account: number;
  created_at: number;
}
interface GroupRow {
  id: number;
  name: string;
  created_at: number;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  username: r.username,
  displayName: r.display_name,
  isAdmin: r.is_admin === 1,
  isServiceAccount: r.is_service_account === 1,
  createdAt: r.created_at,
});
const toGroup = (r: GroupRow): Group => ({ id: r.id, name: r.name, createdAt: r.created_at });

export interface NewUser {
  username: string;
  displayName: string;
  isAdmin: boolean;
  isServiceAccount: boolean;
}

/** Users, groups and memberships: the queries of the tables this module owns. */
export function createDirectory(db: Db, now: () => number = Date.now) {
  const q = {
    userByName: db.prepare<[string], UserRow>('SELECT * FROM users WHERE username = ?'),
    userById: db.prepare<[number], UserRow>('SELECT * FROM users WHERE id = ?'),
    listUsers: db.prepare<[number], UserRow>('SELECT * FROM users WHERE is_service_account = ? ORDER BY username'),
    listAllUsers: db.prepare<[], UserRow>('SELECT * FROM users ORDER BY username'),
    insertUser: db.prepare(
      'INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES (?, ?, ?, ?, ?)',
    ),
    updateUser: db.prepare('UPDATE users SET display_name = ?, is_admin = ? WHERE id = ?'),
    deleteUser: db.prepare('DELETE FROM users WHERE id = ?'),
    groupByName: db.prepare<[string], GroupRow>('SELECT * FROM groups WHERE name = ?'),
    listGroups: db.prepare<[], GroupRow>('SELECT * FROM groups ORDER BY name'),
    insertGroup: db.prepare('INSERT INTO groups (name, created_at) VALUES (?, ?)'),
    deleteGroup: db.prepare('DELETE FROM groups WHERE id = ?'),
    groupsOfUser: db.prepare<[number], GroupRow>(
      'SELECT g.* FROM groups g JOIN group_members m ON m.group_id = g.id WHERE m.user_id = ? ORDER BY g.name',
    ),
    groupIdsOfUser: db.prepare<[number], { group_id: number }>('SELECT group_id FROM group_members WHERE user_id = ?'),
    membersOfGroup: db.prepare<[number], UserRow>(
      'SELECT u.* FROM users u JOIN group_members m ON m.user_id = u.id WHERE m.group_id = ? ORDER BY u.username',
    ),
    addMember: db.prepare('INSERT OR IGNORE INTO group_members (group_id, user_id) VALUES (?, ?)'),
    removeMember: db.prepare('DELETE FROM group_members WHERE group_id = ? AND user_id = ?'),
    removeAllMemberships: db.prepare('DELETE FROM group_members WHERE user_id = ?'),
    searchUsers: db.prepare<[number, number, string, string, number, number], UserRow>(
      `SELECT * FROM users WHERE is_service_account IN (?, ?)
         AND (instr(lower(username), lower(?)) > 0 OR instr(lower(display_name), lower(?)) > 0)
       ORDER BY username LIMIT ? OFFSET ?`,
    ),
    searchGroups: db.prepare<[string, number, number], GroupRow & { members: number }>(
      `SELECT g.*, (SELECT count(*) FROM group_members m WHERE m.group_id = g.id) AS members
         FROM groups g WHERE instr(lower(g.name), lower(?)) > 0 ORDER BY g.name LIMIT ? OFFSET ?`,
    ),
    counts: db.prepare<[], { users: number; groups: number; memberships: number }>(
      `SELECT (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM groups) AS groups,
              (SELECT count(*) FROM group_members) AS memberships`,
    ),
  };

  return {
    userByName: (username: string): User | undefined => {
      const r = q.userByName.get(username);
      return r && toUser(r);
    },
    userById: (id: number): User | undefined => {
      const r = q.userById.get(id);
      return r && toUser(r);
    },
    listUsers: (serviceAccounts?: boolean): User[] =>
      (serviceAccounts === undefined ? q.listAllUsers.all() : q.listUsers.all(serviceAccounts ? 1 : 0)).map(toUser),
    createUser: (u: NewUser): User => {
      const info = q.insertUser.run(u.username, u.displayName, u.isAdmin ? 1 : 0, u.isServiceAccount ? 1 : 0, now());
      return toUser(q.userById.get(Number(info.lastInsertRowid))!);
    },
    updateUser: (id: number, displayName: string, isAdmin: boolean): void => {
      q.updateUser.run(displayName, isAdmin ? 1 : 0, id);
    },
    deleteUser: (id: number): void => {
      q.deleteUser.run(id);
    },
    groupByName: (name: string): Group | undefined => {
      const r = q.groupByName.get(name);
      return r && toGroup(r);
    },
    listGroups: (): Group[] => q.listGroups.all().map(toGroup),
    createGroup: (name: string): Group => {
      q.insertGroup.run(name, now());
      return toGroup(q.groupByName.get(name)!);
    },
    deleteGroup: (id: number): void => {
      q.deleteGroup.run(id);
    },
    groupsOfUser: (userId: number): Group[] => q.groupsOfUser.all(userId).map(toGroup),
    groupIdsOfUser: (userId: number): number[] => q.groupIdsOfUser.all(userId).map((r) => r.group_id),
    membersOfGroup: (groupId: number): User[] => q.membersOfGroup.all(groupId).map(toUser),
    addMember: (groupId: number, userId: number): boolean => q.addMember.run(groupId, userId).changes > 0,
    removeMember: (groupId: number, userId: number): boolean => q.removeMember.run(groupId, userId).changes > 0,
    /** Makes the user's memberships exactly `groupIds` (used at OIDC login). */
    setMemberships: (userId: number, groupIds: readonly number[]): void => {
      q.removeAllMemberships.run(userId);
      for (const g of groupIds) q.addMember.run(g, userId);
    },
    /** Users whose name or display name contains `text` (any case), a page at a time. */
    searchUsers: (kind: 'user' | 'service_account' | 'all', text: string, limit: number, offset: number): User[] => {
      const [a, b] = kind === 'user' ? [0, 0] : kind === 'service_account' ? [1, 1] : [0, 1];
      return q.searchUsers.all(a, b, text, text, limit, offset).map(toUser);
    },
    /** Groups whose name contains `text` (any case), with their member counts, a page at a time. */
    searchGroups: (text: string, limit: number, offset: number): Array<Group & { members: number }> =>
      q.searchGroups.all(text, limit, offset).map((r) => ({ ...toGroup(r), members: r.members })),
    counts: () => q.counts.get()!,
  };
}

export type Directory = ReturnType<typeof createDirectory>;
