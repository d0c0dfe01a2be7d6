import { keyedInWorkspace, WORKSPACE } from '../resources/kinds.js';
import { DEFAULT_WORKSPACE, splitQualified } from '../workspaces/names.js';
import type { Grantee } from '../authz/grants-repo.js';
import type { Permission, ResourceKind } from '../authz/types.js';
import type { Sql } from '../store/sql.js';

/**
 * A grantee's grants and pattern grants, each with the number MLflow's role routes address it by
 * (`role_permission_id`). The two tables number their rows apart, so the number interleaves them: a
 * grant's row id doubled, a pattern grant's doubled plus one. It lasts as long as the row: changing
 * the level keeps it, revoking and granting again gives a new one, as MLflow's does.
 *
 * Read-only: every change goes through the grant and pattern writers, called inside the held grant's
 * own workspace with its id there (`workspace`, `name`), never with the stored form (`target`), which
 * the writers would key in the request's workspace a second time.
 */
export interface HeldGrant {
  readonly id: number;
  readonly kind: ResourceKind;
  /** The grant's resource id as stored, or the pattern. */
  readonly target: string;
  /** The workspace the grant is kept in (for a workspace's own membership: that workspace). */
  readonly workspace: string;
  /** The resource id or pattern as MLflow names it in that workspace (`target` without its workspace). */
  readonly name: string;
  readonly pattern: boolean;
  readonly permission: Permission;
  readonly grantee: Grantee;
}

interface Row {
  readonly id: number;
  readonly resource_kind: ResourceKind;
  readonly target: string;
  readonly user_id: number | null;
  readonly group_id: number | null;
  readonly permission: Permission;
}

const GRANTS = 'SELECT id, resource_kind, resource_id AS target, user_id, group_id, permission FROM grants';
const PATTERNS = 'SELECT id, resource_kind, pattern AS target, user_id, group_id, permission FROM pattern_grants';

/** Where a stored grant lives: a keyed kind's in the workspace its key names; a workspace's membership in that workspace. */
function placed(kind: ResourceKind, target: string): { workspace: string; name: string } {
  if (keyedInWorkspace(kind)) {
    const { workspace, id } = splitQualified(target);
    return { workspace, name: id };
  }
  return { workspace: kind === WORKSPACE ? target : DEFAULT_WORKSPACE, name: target };
}

const held =
  (pattern: boolean) =>
  (r: Row): HeldGrant => ({
    id: Number(r.id) * 2 + (pattern ? 1 : 0),
    kind: r.resource_kind,
    target: r.target,
    ...placed(r.resource_kind, r.target),
    pattern,
    permission: r.permission,
    grantee: r.user_id !== null ? { type: 'user', id: Number(r.user_id) } : { type: 'group', id: Number(r.group_id) },
  });

const column = (g: Grantee) => (g.type === 'user' ? 'user_id' : 'group_id');

/**
 * Every grant and pattern grant the grantee holds in `workspace`, in the order they were made (grants
 * first). MLflow's role routes act in the role's workspace (`default`, `ROLE_WORKSPACE`); its per-user
 * routes in the request's: another workspace's grants are not theirs to show or change.
 */
export async function heldGrantsOf(sql: Sql, grantee: Grantee, workspace: string = DEFAULT_WORKSPACE): Promise<HeldGrant[]> {
  return (await everyHeldGrantOf(sql, grantee)).filter((h) => h.workspace === workspace);
}

/** Every grant and pattern grant the grantee holds, in every workspace (each says which), grants first. */
export async function everyHeldGrantOf(sql: Sql, grantee: Grantee): Promise<HeldGrant[]> {
  const c = column(grantee);
  const grants = await sql.all<Row>(`${GRANTS} WHERE ${c} = ? ORDER BY id`, [grantee.id]);
  const patterns = await sql.all<Row>(`${PATTERNS} WHERE ${c} = ? ORDER BY id`, [grantee.id]);
  return [...grants.map(held(false)), ...patterns.map(held(true))];
}

/** The grant or pattern grant a `role_permission_id` names, if any, in whichever workspace it is kept (the caller checks which). */
export async function heldGrantById(sql: Sql, id: number): Promise<HeldGrant | undefined> {
  if (!Number.isSafeInteger(id) || id < 2) return undefined;
  const pattern = id % 2 === 1;
  const row = await sql.get<Row>(`${pattern ? PATTERNS : GRANTS} WHERE id = ?`, [Math.floor(id / 2)]);
  return row && held(pattern)(row);
}
