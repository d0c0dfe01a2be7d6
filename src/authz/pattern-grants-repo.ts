import { keyedInWorkspace } from '../resources/kinds.js';
import type { Sql } from '../store/sql.js';
import { DEFAULT_WORKSPACE, qualify, splitQualified } from '../workspaces/names.js';
import { currentWorkspace } from '../workspaces/request-workspace.js';
import { keyPrefix, type Grantee } from './grants-repo.js';
import type { PatternGrant } from './pattern-index.js';
import { compilePattern } from './pattern-match.js';
import type { Permission, ResourceKind } from './types.js';

interface Row {
  readonly resource_kind: ResourceKind;
  readonly pattern: string;
  readonly user_id: number | null;
  readonly group_id: number | null;
  readonly permission: Permission;
}

export interface GranteePatternGrant {
  readonly kind: ResourceKind;
  readonly pattern: string;
  readonly permission: Permission;
}

const COLUMNS = 'SELECT resource_kind, pattern, user_id, group_id, permission FROM pattern_grants';

/** Sorted here, not in SQL: PostgreSQL's collation would order the same rows differently from SQLite's. */
function ordered<R extends Row>(rows: R[]): R[] {
  const text = (a: string, b: string) => (a === b ? 0 : a < b ? -1 : 1);
  const isGroup = (r: Row) => Number(r.user_id === null);
  const id = (r: Row) => (r.user_id ?? r.group_id) as number;
  return rows.sort(
    (a, b) =>
      text(a.resource_kind, b.resource_kind) || text(a.pattern, b.pattern) || isGroup(a) - isGroup(b) || id(a) - id(b),
  );
}

/** A pattern as stored: keyed in the request's workspace, like grants (src/workspaces/names.ts). */
const storedPattern = (kind: ResourceKind, pattern: string): string => (keyedInWorkspace(kind) ? qualify(currentWorkspace(), pattern) : pattern);

/** The request's workspace's pattern grants, each by its pattern as written (the admin API acts in one workspace). */
function hereOnly<G extends { readonly pattern: string; readonly kind: ResourceKind }>(grants: readonly G[]): G[] {
  const here = currentWorkspace() ?? DEFAULT_WORKSPACE;
  return grants.flatMap((grant) => {
    if (!keyedInWorkspace(grant.kind)) return [grant];
    const { workspace, id } = splitQualified(grant.pattern);
    return workspace === here ? [{ ...grant, pattern: id }] : [];
  });
}

const toGrant = (r: Row): PatternGrant => ({
  kind: r.resource_kind,
  pattern: r.pattern,
  grantee: r.user_id !== null ? { type: 'user', id: r.user_id } : { type: 'group', id: r.group_id as number },
  permission: r.permission,
});

/** The pattern_grants table. Patterns are validated here, so the index never meets one it cannot compile. */
export function createPatternGrantsRepo(sql: Sql, now: () => number = Date.now) {
  const column = (grantee: Grantee) => (grantee.type === 'user' ? 'user_id' : 'group_id');

  return {
    async all(): Promise<PatternGrant[]> {
      return ordered(await sql.all<Row>(COLUMNS)).map(toGrant);
    },
    /** A kind's pattern grants in the request's workspace. */
    async list(kind: ResourceKind): Promise<PatternGrant[]> {
      return hereOnly(ordered(await sql.all<Row>(`${COLUMNS} WHERE resource_kind = ?`, [kind])).map(toGrant));
    },
    /** Every pattern grant (of one kind, if given) with its grantee's name, in one query. */
    async named(kind?: ResourceKind): Promise<Array<PatternGrant & { readonly granteeName: string }>> {
      const rows = await sql.all<Row & { grantee_name: string }>(
        `SELECT p.resource_kind, p.pattern, p.user_id, p.group_id, p.permission, COALESCE(u.username, g.name) AS grantee_name
           FROM pattern_grants p LEFT JOIN users u ON u.id = p.user_id LEFT JOIN groups g ON g.id = p.group_id
          WHERE CAST(? AS TEXT) IS NULL OR p.resource_kind = ?`,
        [kind ?? null, kind ?? null],
      );
      return hereOnly(ordered(rows).map((r) => ({ ...toGrant(r), granteeName: r.grantee_name })));
    },
    /** Sets the grantee's permission on the pattern; false when it already held exactly that one. */
    async upsert(grantee: Grantee, kind: ResourceKind, given: string, permission: Permission): Promise<boolean> {
      const pattern = storedPattern(kind, given);
      compilePattern(pattern);
      const c = column(grantee);
      const t = now();
      const changed = await sql.run(
        `INSERT INTO pattern_grants (resource_kind, pattern, ${c}, permission, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (${c}, resource_kind, pattern) WHERE ${c} IS NOT NULL
         DO UPDATE SET permission = excluded.permission, updated_at = excluded.updated_at
         WHERE pattern_grants.permission <> excluded.permission`,
        [kind, pattern, grantee.id, permission, t, t],
      );
      return changed > 0;
    },
    async delete(grantee: Grantee, kind: ResourceKind, pattern: string): Promise<boolean> {
      const c = column(grantee);
      return (await sql.run(`DELETE FROM pattern_grants WHERE ${c} = ? AND resource_kind = ? AND pattern = ?`, [grantee.id, kind, storedPattern(kind, pattern)])) > 0;
    },
    async get(grantee: Grantee, kind: ResourceKind, pattern: string): Promise<Permission | undefined> {
      const row = await sql.get<{ permission: Permission }>(
        `SELECT permission FROM pattern_grants WHERE ${column(grantee)} = ? AND resource_kind = ? AND pattern = ?`,
        [grantee.id, kind, storedPattern(kind, pattern)],
      );
      return row?.permission;
    },
    /** Removes every pattern grant made in `workspace` (stored as `<workspace><separator><pattern>`); the number removed. */
    deleteIn(workspace: string): Promise<number> {
      const prefix = keyPrefix(workspace);
      return sql.run('DELETE FROM pattern_grants WHERE substr(pattern, 1, length(CAST(? AS TEXT))) = CAST(? AS TEXT)', [prefix, prefix]);
    },
    async ofGrantee(grantee: Grantee): Promise<GranteePatternGrant[]> {
      const rows = ordered(await sql.all<Row>(`${COLUMNS} WHERE ${column(grantee)} = ?`, [grantee.id]));
      return hereOnly(rows.map((r) => ({ kind: r.resource_kind, pattern: r.pattern, permission: r.permission })));
    },
  };
}

export type PatternGrantsRepo = ReturnType<typeof createPatternGrantsRepo>;
