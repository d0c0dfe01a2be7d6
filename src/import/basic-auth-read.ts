import type { SourceDatabase } from './source-database.js';

/** One grant row as MLflow basic-auth keeps it (roles generation), or as read from a per-user table (older ones). */
export interface BasicAuthRule {
  readonly resourceType: string;
  readonly pattern: string;
  readonly permission: string;
}

export interface BasicAuthRole {
  readonly id: number;
  readonly name: string;
  readonly workspace: string;
  readonly rules: readonly BasicAuthRule[];
  /** Role ids of `__user_<id>__`: a user's own grants, which basic-auth keeps as a role of their own. */
  readonly ownerUserId: number | undefined;
}

export interface BasicAuthUser {
  readonly id: number;
  readonly username: string;
  readonly passwordHash: string | null;
  readonly isAdmin: boolean;
}

/**
 * A basic-auth database read as one model: since the roles generation every grant is a role's (a
 * user's own grants on a role of their own), and the per-user tables of older generations are read
 * into the same shape, each user's rows as their own role in the `default` workspace.
 */
export interface BasicAuthState {
  /** `roles` (MLflow 3.13+, after the migration that moved grants into roles) or `per-user tables`. */
  readonly generation: 'roles' | 'per-user tables';
  readonly revision: string | undefined;
  readonly users: readonly BasicAuthUser[];
  readonly roles: readonly BasicAuthRole[];
  /** user id → role ids. */
  readonly assignments: ReadonlyMap<number, readonly number[]>;
  /** Per-user generation only: rows of tables this reader keeps no rule for, as text (workspace permissions). */
  readonly unread: readonly string[];
}

// Revisions before `e5f6a7b8c9d0`, which moved the per-user tables' grants into roles; the roles
// tables exist from `c3d4e5f6a7b8` but basic-auth reads them only after that migration.
const PER_USER_REVISIONS = new Set(['8606fa83a998', '0965eb92f5f0', 'a1b2c3d4e5f6', '2ed73881770d', 'c3d4e5f6a7b8']);
const SYNTHETIC_ROLE = /^__user_(\d+)__$/;
const DEFAULT_WORKSPACE = 'default';

const bool = (v: unknown) => v === true || v === 1 || v === '1' || v === 't';

export async function readBasicAuth(db: SourceDatabase): Promise<BasicAuthState> {
  if (!db.tables.has('users')) throw new Error(`${db.name} has no 'users' table: not an MLflow basic-auth database`);
  const revision = db.tables.has('alembic_version_auth')
    ? (await db.all<{ version_num: string }>('SELECT version_num FROM alembic_version_auth'))[0]?.version_num
    : undefined;
  const users = (await db.all<{ id: number; username: string; password_hash: string | null; is_admin: unknown }>('SELECT id, username, password_hash, is_admin FROM users ORDER BY id')).map(
    (u): BasicAuthUser => ({ id: Number(u.id), username: u.username, passwordHash: u.password_hash, isAdmin: bool(u.is_admin) }),
  );
  const rolesGeneration = db.tables.has('roles') && db.tables.has('role_permissions') && !(revision !== undefined && PER_USER_REVISIONS.has(revision));
  if (rolesGeneration) return { generation: 'roles', revision, users, ...(await readRoles(db)), unread: [] };
  return { generation: 'per-user tables', revision, users, ...(await readPerUserTables(db, users)) };
}

async function readRoles(db: SourceDatabase): Promise<Pick<BasicAuthState, 'roles' | 'assignments'>> {
  const rules = await db.all<{ role_id: number; resource_type: string; resource_pattern: string; permission: string }>(
    'SELECT role_id, resource_type, resource_pattern, permission FROM role_permissions ORDER BY id',
  );
  const byRole = new Map<number, BasicAuthRule[]>();
  for (const r of rules) {
    const list = byRole.get(Number(r.role_id)) ?? [];
    list.push({ resourceType: r.resource_type, pattern: r.resource_pattern, permission: r.permission });
    byRole.set(Number(r.role_id), list);
  }
  const roles = (await db.all<{ id: number; name: string; workspace: string }>('SELECT id, name, workspace FROM roles ORDER BY id')).map((r): BasicAuthRole => {
    const owner = SYNTHETIC_ROLE.exec(r.name);
    return { id: Number(r.id), name: r.name, workspace: r.workspace, rules: byRole.get(Number(r.id)) ?? [], ownerUserId: owner ? Number(owner[1]) : undefined };
  });
  const assignments = new Map<number, number[]>();
  for (const a of await db.all<{ user_id: number; role_id: number }>('SELECT user_id, role_id FROM user_role_assignments ORDER BY id')) {
    const list = assignments.get(Number(a.user_id)) ?? [];
    list.push(Number(a.role_id));
    assignments.set(Number(a.user_id), list);
  }
  return { roles, assignments };
}

/** The per-user tables of basic-auth before 3.13, each with the columns naming its resource. */
const PER_USER_TABLES: ReadonlyArray<{ table: string; type: string; id: (row: Record<string, unknown>) => string; columns: string }> = [
  { table: 'experiment_permissions', type: 'experiment', id: (r) => String(r.experiment_id), columns: 'experiment_id' },
  // Before prompts were told apart, a model's grant was the grant on whichever registered model had the name, prompt or not.
  { table: 'registered_model_permissions', type: 'registered_model_or_prompt', id: (r) => String(r.name), columns: 'name' },
  { table: 'scorer_permissions', type: 'scorer', id: (r) => `${String(r.experiment_id)}/${encodeURIComponent(String(r.scorer_name))}`, columns: 'experiment_id, scorer_name' },
  { table: 'gateway_secret_permissions', type: 'gateway_secret', id: (r) => String(r.secret_id), columns: 'secret_id' },
  { table: 'gateway_endpoint_permissions', type: 'gateway_endpoint', id: (r) => String(r.endpoint_id), columns: 'endpoint_id' },
  { table: 'gateway_model_definition_permissions', type: 'gateway_model_definition', id: (r) => String(r.model_definition_id), columns: 'model_definition_id' },
];

async function readPerUserTables(db: SourceDatabase, users: readonly BasicAuthUser[]): Promise<Pick<BasicAuthState, 'roles' | 'assignments' | 'unread'>> {
  const rules = new Map<string, BasicAuthRule[]>();
  const unread: string[] = [];
  const names = new Map(users.map((u) => [u.id, u.username]));
  for (const t of PER_USER_TABLES) {
    if (!db.tables.has(t.table)) continue;
    // `registered_model_permissions` gained a workspace column with workspaces (2ed73881770d).
    const hasWorkspace = t.table === 'registered_model_permissions' && (await columnsOf(db, t.table)).has('workspace');
    const rows = await db.all<Record<string, unknown>>(`SELECT ${t.columns}, user_id, permission${hasWorkspace ? ', workspace' : ''} FROM ${t.table} ORDER BY id`);
    for (const r of rows) {
      const workspace = hasWorkspace ? String(r.workspace) : DEFAULT_WORKSPACE;
      const key = `${Number(r.user_id)}\u0000${workspace}`;
      const list = rules.get(key) ?? [];
      list.push({ resourceType: t.type, pattern: t.id(r), permission: String(r.permission) });
      rules.set(key, list);
    }
  }
  if (db.tables.has('workspace_permissions'))
    for (const r of await db.all<{ workspace: string; user_id: number; permission: string }>('SELECT workspace, user_id, permission FROM workspace_permissions'))
      unread.push(`workspace ${r.workspace}: ${r.permission} of user ${names.get(Number(r.user_id)) ?? r.user_id} on the whole workspace (flowgate has no workspace-wide permission)`);
  const roles: BasicAuthRole[] = [];
  const assignments = new Map<number, number[]>();
  for (const [key, list] of rules) {
    const [userText, workspace] = key.split('\u0000') as [string, string];
    const userId = Number(userText);
    const id = -(roles.length + 1);
    roles.push({ id, name: `__user_${userId}__`, workspace, rules: list, ownerUserId: userId });
    assignments.set(userId, [...(assignments.get(userId) ?? []), id]);
  }
  return { roles, assignments, unread };
}

async function columnsOf(db: SourceDatabase, table: string): Promise<Set<string>> {
  const rows = await db.all<Record<string, unknown>>(`SELECT * FROM ${table} LIMIT 1`);
  if (rows.length > 0) return new Set(Object.keys(rows[0]!));
  // An empty table says nothing through SELECT *: ask the catalog.
  try {
    return new Set((await db.all<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)).map((r) => r.name));
  } catch {
    return new Set((await db.all<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_name = '${table}'`)).map((r) => r.column_name));
  }
}
