import { keyedInWorkspace, RESOURCE_KINDS } from '../resources/kinds.js';
import { BY_RANK } from '../resources/permissions.js';
import type { Sql } from '../store/sql.js';
import { DEFAULT_WORKSPACE, qualify, splitQualified, workspaceNameProblem } from '../workspaces/names.js';
import { currentWorkspace } from '../workspaces/request-workspace.js';
import type { Permission, ResourceKind, ResourceRef } from './types.js';

export type Grantee = { readonly type: 'user'; readonly id: number } | { readonly type: 'group'; readonly id: number };

/**
 * A grant as the in-memory policy index takes it: its kind and permission as their positions in
 * `RESOURCE_KINDS` and `BY_RANK` (null for a word this version does not know), its grantee as one
 * number (a user id, or a negated group id). Rows of words gave the loader three new strings per
 * grant, and on a large store that garbage, more than the index, set the peak memory of a start.
 */
export interface IndexedGrant {
  readonly kind: number | null;
  readonly resource_id: string;
  readonly grantee: number;
  readonly grant_rank: number | null;
}

/** `column`'s word as its position in `words` (internal constants, never input). */
const positionIn = (column: string, words: readonly string[]) => `CASE ${column} ${words.map((w, i) => `WHEN '${w}' THEN ${i}`).join(' ')} END`;
const INDEXED_COLUMNS = `${positionIn('resource_kind', RESOURCE_KINDS)} AS kind, resource_id, COALESCE(user_id, -group_id) AS grantee, ${positionIn('permission', BY_RANK)} AS grant_rank`;

export interface GrantRow {
  readonly resource_kind: ResourceKind;
  readonly resource_id: string;
  readonly permission: Permission;
  readonly name: string;
}

export interface GrantSearchRow {
  readonly grantee_type: 'user' | 'service_account' | 'group';
  readonly name: string;
  readonly permission: Permission;
}

/** The grantee column of a grant row: queries are per grantee side, each a single indexed look-up. */
const column = (grantee: Grantee) => (grantee.type === 'user' ? 'user_id' : 'group_id');

const SQL = {
  get: {
    user_id: 'SELECT permission FROM grants WHERE user_id = ? AND resource_kind = ? AND resource_id = ?',
    group_id: 'SELECT permission FROM grants WHERE group_id = ? AND resource_kind = ? AND resource_id = ?',
  },
  insert: {
    user_id: 'INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
    group_id: 'INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
  },
  update: {
    user_id: 'UPDATE grants SET permission = ?, updated_at = ? WHERE user_id = ? AND resource_kind = ? AND resource_id = ?',
    group_id: 'UPDATE grants SET permission = ?, updated_at = ? WHERE group_id = ? AND resource_kind = ? AND resource_id = ?',
  },
  delete: {
    user_id: 'DELETE FROM grants WHERE user_id = ? AND resource_kind = ? AND resource_id = ?',
    group_id: 'DELETE FROM grants WHERE group_id = ? AND resource_kind = ? AND resource_id = ?',
  },
  listOf: {
    user_id: `SELECT resource_kind, resource_id, permission, '' AS name FROM grants
       WHERE user_id = ? AND resource_kind = ? ORDER BY resource_id`,
    group_id: `SELECT resource_kind, resource_id, permission, '' AS name FROM grants
       WHERE group_id = ? AND resource_kind = ? ORDER BY resource_id`,
  },
  usersOnResource: `SELECT g.resource_kind, g.resource_id, g.permission, u.username AS name FROM grants g
       JOIN users u ON u.id = g.user_id WHERE g.resource_kind = ? AND g.resource_id = ? ORDER BY u.username`,
  groupsOnResource: `SELECT g.resource_kind, g.resource_id, g.permission, gr.name AS name FROM grants g
       JOIN groups gr ON gr.id = g.group_id WHERE g.resource_kind = ? AND g.resource_id = ? ORDER BY gr.name`,
  deleteResource: 'DELETE FROM grants WHERE resource_kind = ? AND resource_id = ?',
  // A grantee holding grants on both names keeps the one of the resource that moved, as
  // `UPDATE OR REPLACE` did: the target's colliding rows go first. Only those: the grant writer
  // prunes the target's other grants itself (audited) before it moves any, so none is merged.
  dropCollisions: `DELETE FROM grants WHERE resource_kind = ? AND resource_id = ? AND (
       user_id IN (SELECT user_id FROM grants WHERE resource_kind = ? AND resource_id = ? AND user_id IS NOT NULL)
       OR group_id IN (SELECT group_id FROM grants WHERE resource_kind = ? AND resource_id = ? AND group_id IS NOT NULL))`,
  moveResource: 'UPDATE grants SET resource_id = ?, updated_at = ? WHERE resource_kind = ? AND resource_id = ?',
  searchOnResource: `SELECT grantee_type, name, permission FROM (
         SELECT CASE u.is_service_account WHEN 1 THEN 'service_account' ELSE 'user' END AS grantee_type, u.username AS name, g.permission
           FROM grants g JOIN users u ON u.id = g.user_id WHERE g.resource_kind = ? AND g.resource_id = ?
         UNION ALL
         SELECT 'group', gr.name, g.permission
           FROM grants g JOIN groups gr ON gr.id = g.group_id WHERE g.resource_kind = ? AND g.resource_id = ?) AS on_resource
       WHERE instr(lower(name), lower(CAST(? AS TEXT))) > 0
       ORDER BY grantee_type = 'group', name LIMIT ? OFFSET ?`,
  // One row per (user, group of theirs), or one with no group: a page of users and all their groups in one statement.
  concernedUsers: `SELECT u.id, u.username, u.is_admin, u.is_service_account, gr.id AS group_id, gr.name AS group_name FROM (
         SELECT id, username, is_admin, is_service_account FROM users WHERE id IN (
           SELECT user_id FROM grants WHERE resource_kind = ? AND resource_id = ? AND user_id IS NOT NULL
           UNION SELECT m.user_id FROM group_members m JOIN grants g ON g.group_id = m.group_id
             WHERE g.resource_kind = ? AND g.resource_id = ?)
         AND instr(lower(username), lower(CAST(? AS TEXT))) > 0 ORDER BY username LIMIT ? OFFSET ?) AS u
       LEFT JOIN group_members m ON m.user_id = u.id LEFT JOIN groups gr ON gr.id = m.group_id
       ORDER BY u.username, gr.name`,
  // Grants kept in one workspace: their stored id starts with `<workspace><separator>` (src/workspaces/names.ts).
  // Compared as text of a length, not by LIKE (no pattern characters to escape) nor by range (PostgreSQL
  // orders text by its collation, which may skip control characters such as the separator).
  resourcesUnder: `SELECT DISTINCT resource_kind, resource_id FROM grants
       WHERE substr(resource_id, 1, length(CAST(? AS TEXT))) = CAST(? AS TEXT)`,
  deleteUnder: 'DELETE FROM grants WHERE substr(resource_id, 1, length(CAST(? AS TEXT))) = CAST(? AS TEXT)',
  count: 'SELECT count(*) AS n FROM grants',
  resources: 'SELECT DISTINCT resource_kind, resource_id FROM grants ORDER BY resource_kind, resource_id',
  page: `SELECT id, ${INDEXED_COLUMNS} FROM grants WHERE id > ? ORDER BY id LIMIT ?`,
  onResourceIndexed: `SELECT ${INDEXED_COLUMNS} FROM grants WHERE resource_kind = ? AND resource_id = ?`,
} as const;

/** A user a resource's grants concern, with the groups they belong to (by name). */
export interface ConcernedUser {
  readonly id: number;
  readonly username: string;
  readonly isAdmin: boolean;
  readonly isServiceAccount: boolean;
  readonly groups: ReadonlyArray<{ readonly id: number; readonly name: string }>;
}

interface ConcernedRow {
  id: number;
  username: string;
  is_admin: number;
  is_service_account: number;
  group_id: number | null;
  group_name: string | null;
}

/**
 * A resource's id as grants are stored: in the request's workspace (see src/workspaces/names.ts). An
 * id read back from the store is split and handled inside its own workspace (`inWorkspace`), never
 * passed here again.
 */
export const storedId = (kind: ResourceKind, id: string): string => (keyedInWorkspace(kind) ? qualify(currentWorkspace(), id) : id);

/**
 * What every id stored in a workspace other than `default` starts with: `<workspace><separator>`. The
 * default workspace's ids are stored as they are (or as `default<separator>…`), so this prefix never
 * reaches them, and a workspace name never holds the separator, so `ws` never reaches `ws-2`'s.
 */
export function keyPrefix(workspace: string): string {
  if (workspace === DEFAULT_WORKSPACE || workspaceNameProblem(workspace) !== undefined) throw new Error(`not a workspace whose grants go by prefix: '${workspace}'`);
  return qualify(workspace, '');
}

/** The grants table. Every resource id it takes is keyed in the request's workspace (`storedId`); rows carry stored ids. */
export function createGrantsRepo(sql: Sql, now: () => number = Date.now) {
  return {
    async get(grantee: Grantee, kind: ResourceKind, id: string): Promise<Permission | undefined> {
      return (await sql.get<{ permission: Permission }>(SQL.get[column(grantee)], [grantee.id, kind, storedId(kind, id)]))?.permission;
    },
    async insert(grantee: Grantee, kind: ResourceKind, id: string, permission: Permission): Promise<void> {
      const t = now();
      await sql.run(SQL.insert[column(grantee)], [kind, storedId(kind, id), grantee.id, permission, t, t]);
    },
    async update(grantee: Grantee, kind: ResourceKind, id: string, permission: Permission): Promise<boolean> {
      return (await sql.run(SQL.update[column(grantee)], [permission, now(), grantee.id, kind, storedId(kind, id)])) > 0;
    },
    async delete(grantee: Grantee, kind: ResourceKind, id: string): Promise<boolean> {
      return (await sql.run(SQL.delete[column(grantee)], [grantee.id, kind, storedId(kind, id)])) > 0;
    },
    /** A grantee's grants on a kind, in the request's workspace, by MLflow's ids. */
    async listOf(grantee: Grantee, kind: ResourceKind): Promise<GrantRow[]> {
      const rows = await sql.all<GrantRow>(SQL.listOf[column(grantee)], [grantee.id, kind]);
      if (!keyedInWorkspace(kind)) return rows;
      const here = currentWorkspace() ?? DEFAULT_WORKSPACE;
      return rows.flatMap((r) => {
        const { workspace, id } = splitQualified(r.resource_id);
        return workspace === here ? [{ ...r, resource_id: id }] : [];
      });
    },
    async onResource(kind: ResourceKind, id: string): Promise<{ users: GrantRow[]; groups: GrantRow[] }> {
      const key = storedId(kind, id);
      const users = await sql.all<GrantRow>(SQL.usersOnResource, [kind, key]);
      const groups = await sql.all<GrantRow>(SQL.groupsOnResource, [kind, key]);
      return { users, groups };
    },
    deleteResource: (kind: ResourceKind, id: string): Promise<number> => sql.run(SQL.deleteResource, [kind, storedId(kind, id)]),
    /**
     * Call inside a transaction: the collisions dropped and the move are one change. Grants on `toId`
     * held by other grantees stay: a caller that must not merge them prunes them first.
     */
    async moveResource(kind: ResourceKind, fromId: string, toId: string): Promise<number> {
      const from = storedId(kind, fromId);
      const to = storedId(kind, toId);
      await sql.run(SQL.dropCollisions, [kind, to, kind, from, kind, from]);
      return sql.run(SQL.moveResource, [to, now(), kind, from]);
    },
    /** A resource's grants (users and service accounts first, then groups) whose grantee name contains `text`, a page at a time. */
    searchOnResource(kind: ResourceKind, id: string, text: string, limit: number, offset: number): Promise<GrantSearchRow[]> {
      const key = storedId(kind, id);
      return sql.all<GrantSearchRow>(SQL.searchOnResource, [kind, key, kind, key, text, limit, offset]);
    },
    /**
     * The users a resource's grants concern (directly or through a group), by name, a page at a time,
     * each with every group they belong to (by name): one statement however long the page.
     */
    async concernedUsers(kind: ResourceKind, id: string, text: string, limit: number, offset: number): Promise<ConcernedUser[]> {
      const key = storedId(kind, id);
      const rows = await sql.all<ConcernedRow>(SQL.concernedUsers, [kind, key, kind, key, text, limit, offset]);
      const users: ConcernedUser[] = [];
      for (const r of rows) {
        if (users.at(-1)?.id !== r.id)
          users.push({ id: r.id, username: r.username, isAdmin: r.is_admin === 1, isServiceAccount: r.is_service_account === 1, groups: [] });
        if (r.group_id !== null) (users.at(-1)!.groups as Array<{ id: number; name: string }>).push({ id: r.group_id, name: r.group_name! });
      }
      return users;
    },
    /** The resources (by stored id) with grants kept in `workspace`: its own membership is not among them. */
    resourcesIn: async (workspace: string): Promise<ResourceRef[]> =>
      (await sql.all<{ resource_kind: ResourceKind; resource_id: string }>(SQL.resourcesUnder, [keyPrefix(workspace), keyPrefix(workspace)])).map(
        (r) => ({ kind: r.resource_kind, id: r.resource_id }) as ResourceRef,
      ),
    /** Removes every grant kept in `workspace` (of any kind, by stored id); its own membership stays. The number removed. */
    deleteIn: (workspace: string): Promise<number> => sql.run(SQL.deleteUnder, [keyPrefix(workspace), keyPrefix(workspace)]),
    count: async (): Promise<number> => (await sql.get<{ n: number }>(SQL.count))!.n,
    /** Every resource that has at least one grant. */
    resources: async (): Promise<ResourceRef[]> =>
      (await sql.all<{ resource_kind: ResourceKind; resource_id: string }>(SQL.resources)).map((r) => ({ kind: r.resource_kind, id: r.resource_id }) as ResourceRef),
    /**
     * Every grant, a page at a time in id order, for the in-memory policy index: a page is garbage as
     * soon as it is indexed, so loading 100k grants never holds them all as rows.
     */
    async *pages(size = 5000): AsyncGenerator<IndexedGrant[]> {
      for (let after = 0; ; ) {
        const rows = await sql.all<IndexedGrant & { id: number }>(SQL.page, [after, size]);
        if (rows.length > 0) yield rows;
        if (rows.length < size) return;
        after = rows[rows.length - 1]!.id;
      }
    },
    onResourceIndexed: (kind: ResourceKind, id: string): Promise<IndexedGrant[]> => sql.all<IndexedGrant>(SQL.onResourceIndexed, [kind, storedId(kind, id)]),
  };
}

export type GrantsRepo = ReturnType<typeof createGrantsRepo>;
