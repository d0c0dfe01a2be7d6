import type { Db } from '../store/database.js';
import type { Permission, ResourceKind, ResourceRef } from './types.js';

export type Grantee = { readonly type: 'user'; readonly id: number } | { readonly type: 'group'; readonly id: number };

export interface RawGrant {
  readonly resource_kind: ResourceKind;
  readonly resource_id: string;
  readonly user_id: number | null;
  readonly group_id: number | null;
  readonly permission: Permission;
}

export interface GrantRow {
  readonly resource_kind: ResourceKind;
  readonly resource_id: string;
  readonly permission: Permission;
  readonly name: string;
}

/** The grants table. Queries are per grantee side, each a single indexed look-up. */
export function createGrantsRepo(db: Db, now: () => number = Date.now) {
  const q = {
    userGrant: db.prepare<[number, string, string], { permission: Permission }>(
      'SELECT permission FROM grants WHERE user_id = ? AND resource_kind = ? AND resource_id = ?',
    ),
    groupGrant: db.prepare<[number, string, string], { permission: Permission }>(
      'SELECT permission FROM grants WHERE group_id = ? AND resource_kind = ? AND resource_id = ?',
    ),
    insertUser: db.prepare(
      'INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    insertGroup: db.prepare(
      'INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    updateUser: db.prepare(
      'UPDATE grants SET permission = ?, updated_at = ? WHERE user_id = ? AND resource_kind = ? AND resource_id = ?',
    ),
    updateGroup: db.prepare(
      'UPDATE grants SET permission = ?, updated_at = ? WHERE group_id = ? AND resource_kind = ? AND resource_id = ?',
    ),
    deleteUser: db.prepare('DELETE FROM grants WHERE user_id = ? AND resource_kind = ? AND resource_id = ?'),
    deleteGroup: db.prepare('DELETE FROM grants WHERE group_id = ? AND resource_kind = ? AND resource_id = ?'),
    ofUser: db.prepare<[number, string], GrantRow>(
      `SELECT resource_kind, resource_id, permission, '' AS name FROM grants
       WHERE user_id = ? AND resource_kind = ? ORDER BY resource_id`,
    ),
    ofGroup: db.prepare<[number, string], GrantRow>(
      `SELECT resource_kind, resource_id, permission, '' AS name FROM grants
       WHERE group_id = ? AND resource_kind = ? ORDER BY resource_id`,
    ),
    usersOnResource: db.prepare<[string, string], GrantRow>(
      `SELECT g.resource_kind, g.resource_id, g.permission, u.username AS name FROM grants g
       JOIN users u ON u.id = g.user_id WHERE g.resource_kind = ? AND g.resource_id = ? ORDER BY u.username`,
    ),
    groupsOnResource: db.prepare<[string, string], GrantRow>(
      `SELECT g.resource_kind, g.resource_id, g.permission, gr.name AS name FROM grants g
       JOIN groups gr ON gr.id = g.group_id WHERE g.resource_kind = ? AND g.resource_id = ? ORDER BY gr.name`,
    ),
    deleteResource: db.prepare('DELETE FROM grants WHERE resource_kind = ? AND resource_id = ?'),
    moveResource: db.prepare(
      'UPDATE OR REPLACE grants SET resource_id = ?, updated_at = ? WHERE resource_kind = ? AND resource_id = ?',
    ),
    searchOnResource: db.prepare<
      [string, string, string, string, string, number, number],
      { grantee_type: 'user' | 'service_account' | 'group'; name: string; permission: Permission }
    >(
      `SELECT grantee_type, name, permission FROM (
         SELECT CASE u.is_service_account WHEN 1 THEN 'service_account' ELSE 'user' END AS grantee_type, u.username AS name, g.permission
           FROM grants g JOIN users u ON u.id = g.user_id WHERE g.resource_kind = ? AND g.resource_id = ?
         UNION ALL
         SELECT 'group', gr.name, g.permission
           FROM grants g JOIN groups gr ON gr.id = g.group_id WHERE g.resource_kind = ? AND g.resource_id = ?)
       WHERE instr(lower(name), lower(?)) > 0
       ORDER BY grantee_type = 'group', name LIMIT ? OFFSET ?`,
    ),
    concernedUsers: db.prepare<[string, string, string, string, string, number, number], { id: number }>(
      `SELECT u.id FROM users u WHERE u.id IN (
         SELECT user_id FROM grants WHERE resource_kind = ? AND resource_id = ? AND user_id IS NOT NULL
         UNION SELECT m.user_id FROM group_members m JOIN grants g ON g.group_id = m.group_id
           WHERE g.resource_kind = ? AND g.resource_id = ?)
       AND instr(lower(u.username), lower(?)) > 0 ORDER BY u.username LIMIT ? OFFSET ?`,
    ),
    count: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM grants'),
    resources: db.prepare<[], { resource_kind: ResourceKind; resource_id: string }>(
      'SELECT DISTINCT resource_kind, resource_id FROM grants ORDER BY resource_kind, resource_id',
    ),
    all: db.prepare<[], RawGrant>('SELECT resource_kind, resource_id, user_id, group_id, permission FROM grants'),
    onResourceRaw: db.prepare<[string, string], RawGrant>(
      'SELECT resource_kind, resource_id, user_id, group_id, permission FROM grants WHERE resource_kind = ? AND resource_id = ?',
    ),
  };

  return {
    get(grantee: Grantee, kind: ResourceKind, id: string): Permission | undefined {
      const stmt = grantee.type === 'user' ? q.userGrant : q.groupGrant;
      return stmt.get(grantee.id, kind, id)?.permission;
    },
    insert(grantee: Grantee, kind: ResourceKind, id: string, permission: Permission): void {
      const t = now();
      (grantee.type === 'user' ? q.insertUser : q.insertGroup).run(kind, id, grantee.id, permission, t, t);
    },
    update(grantee: Grantee, kind: ResourceKind, id: string, permission: Permission): boolean {
      const stmt = grantee.type === 'user' ? q.updateUser : q.updateGroup;
      return stmt.run(permission, now(), grantee.id, kind, id).changes > 0;
    },
    delete(grantee: Grantee, kind: ResourceKind, id: string): boolean {
      return (grantee.type === 'user' ? q.deleteUser : q.deleteGroup).run(grantee.id, kind, id).changes > 0;
    },
    listOf(grantee: Grantee, kind: ResourceKind): GrantRow[] {
      return (grantee.type === 'user' ? q.ofUser : q.ofGroup).all(grantee.id, kind);
    },
    onResource(kind: ResourceKind, id: string) {
      return { users: q.usersOnResource.all(kind, id), groups: q.groupsOnResource.all(kind, id) };
    },
    deleteResource(kind: ResourceKind, id: string): number {
      return q.deleteResource.run(kind, id).changes;
    },
    moveResource(kind: ResourceKind, from: string, to: string): number {
      return q.moveResource.run(to, now(), kind, from).changes;
    },
    /** A resource's grants (users and service accounts first, then groups) whose grantee name contains `text`, a page at a time. */
    searchOnResource: (kind: ResourceKind, id: string, text: string, limit: number, offset: number) =>
      q.searchOnResource.all(kind, id, kind, id, text, limit, offset),
    /** The ids of users a resource's grants concern (directly or through a group), by name, a page at a time. */
    concernedUsers: (kind: ResourceKind, id: string, text: string, limit: number, offset: number): number[] =>
      q.concernedUsers.all(kind, id, kind, id, text, limit, offset).map((r) => r.id),
    count: (): number => q.count.get()!.n,
    /** Every resource that has at least one grant. */
    resources: (): ResourceRef[] => q.resources.all().map((r) => ({ kind: r.resource_kind, id: r.resource_id }) as ResourceRef),
    /** Every grant, for the in-memory policy index. */
    all: (): IterableIterator<RawGrant> => q.all.iterate(),
    onResourceRaw: (kind: ResourceKind, id: string): RawGrant[] => q.onResourceRaw.all(kind, id),
  };
}

export type GrantsRepo = ReturnType<typeof createGrantsRepo>;
