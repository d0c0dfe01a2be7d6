import type { ResourceKind } from '../authz/types.js';
import type { PlanGrantee } from './plan.js';
import type { SourceDatabase } from './source-database.js';
import { storableDisplayName } from '../principals/display-name.js';

export interface OidcAuthUser {
  readonly username: string;
  readonly displayName: string | undefined;
  readonly isAdmin: boolean;
  readonly isServiceAccount: boolean;
  /** `active` (the identity-lifecycle generation on); true where the column is not there yet. */
  readonly active: boolean;
}

/** A grant row on one resource (its kinds: a registered model's grant is also the prompt's of that name). */
export interface OidcAuthGrant {
  readonly grantee: PlanGrantee;
  readonly kinds: readonly ResourceKind[];
  readonly id: string;
  readonly permission: string;
  /** The row's workspace; null before grants carried one (or where unassigned). */
  readonly workspace: string | null;
  readonly rowId: number;
}

/** A regex rule: `re.match(regex, name)` on the resource's name, tried by priority (lower first). */
export interface OidcAuthRule {
  readonly grantee: PlanGrantee;
  readonly kinds: readonly ResourceKind[];
  readonly regex: string;
  readonly priority: number;
  readonly permission: string;
  readonly workspace: string | null;
  readonly rowId: number;
}

export interface OidcAuthState {
  /** The alembic revision and what its schema has, for the plan's header. */
  readonly generation: string;
  readonly users: readonly OidcAuthUser[];
  readonly groups: ReadonlyArray<{ readonly name: string; readonly members: readonly string[] }>;
  readonly grants: readonly OidcAuthGrant[];
  readonly rules: readonly OidcAuthRule[];
  /** Rows this reader keeps no rule for (workspace permissions), as text. */
  readonly unread: readonly string[];
}

interface GrantTable {
  readonly user: string;
  readonly group: string;
  /** The columns naming the resource, and the id they make. */
  readonly columns: readonly string[];
  readonly id: (row: Record<string, unknown>) => string;
  readonly kinds: readonly ResourceKind[];
}

// Prompts are registered models to the plugin: their grants live in the model tables, and a check
// on either counts the row whatever its `prompt` flag. Names are one space, so the row is both.
const GRANT_TABLES: readonly GrantTable[] = [
  { user: 'experiment_permissions', group: 'experiment_group_permissions', columns: ['experiment_id'], id: (r) => String(r.experiment_id), kinds: ['experiment'] },
  { user: 'registered_model_permissions', group: 'registered_model_group_permissions', columns: ['name'], id: (r) => String(r.name), kinds: ['registered_model', 'prompt'] },
  {
    user: 'scorer_permissions',
    group: 'scorer_group_permissions',
    columns: ['experiment_id', 'scorer_name'],
    id: (r) => `${String(r.experiment_id)}/${String(r.scorer_name)}`,
    kinds: ['scorer'],
  },
  // The plugin keys gateway grants by name (its resolvers pass the name), as flowgate does.
  { user: 'gateway_endpoint_permissions', group: 'gateway_endpoint_group_permissions', columns: ['endpoint_id'], id: (r) => String(r.endpoint_id), kinds: ['gateway_endpoint'] },
  { user: 'gateway_secret_permissions', group: 'gateway_secret_group_permissions', columns: ['secret_id'], id: (r) => String(r.secret_id), kinds: ['gateway_secret'] },
  {
    user: 'gateway_model_definition_permissions',
    group: 'gateway_model_definition_group_permissions',
    columns: ['model_definition_id'],
    id: (r) => String(r.model_definition_id),
    kinds: ['gateway_model_definition'],
  },
  { user: 'mcp_server_permissions', group: 'mcp_server_group_permissions', columns: ['name'], id: (r) => String(r.name), kinds: ['mcp_server'] },
];

interface RuleTable {
  readonly user: string;
  readonly group: string;
  readonly kinds: readonly ResourceKind[];
  /** The model tables' `prompt` flag tells a prompt's rule from a model's (before it, one rule was both). */
  readonly promptFlag?: boolean;
}

const RULE_TABLES: readonly RuleTable[] = [
  { user: 'experiment_regex_permissions', group: 'experiment_group_regex_permissions', kinds: ['experiment'] },
  { user: 'registered_model_regex_permissions', group: 'registered_model_group_regex_permissions', kinds: ['registered_model', 'prompt'], promptFlag: true },
  { user: 'scorer_regex_permissions', group: 'scorer_group_regex_permissions', kinds: ['scorer'] },
  { user: 'gateway_endpoint_regex_permissions', group: 'gateway_endpoint_group_regex_permissions', kinds: ['gateway_endpoint'] },
  { user: 'gateway_secret_regex_permissions', group: 'gateway_secret_group_regex_permissions', kinds: ['gateway_secret'] },
  { user: 'gateway_model_definition_regex_permissions', group: 'gateway_model_definition_group_regex_permissions', kinds: ['gateway_model_definition'] },
];

/** Grants on workspaces themselves: flowgate's workspace standing is not the plugin's fallback. */
const WORKSPACE_TABLES = ['workspace_permissions', 'workspace_group_permissions', 'workspace_regex_permissions', 'workspace_group_regex_permissions', 'workspace_group_rules'];

const bool = (v: unknown) => v === true || v === 1 || v === '1' || v === 't' || v === 'true';

/** What the schema has, in the order the plugin's migrations added it. */
const FEATURES: ReadonlyArray<[string, string]> = [
  ['user_groups', 'groups'],
  ['experiment_regex_permissions', 'regex rules'],
  ['scorer_permissions', 'scorers'],
  ['gateway_endpoint_permissions', 'AI gateway'],
  ['workspace_permissions', 'workspaces'],
  ['mcp_server_permissions', 'MCP servers'],
];

export async function readOidcAuth(db: SourceDatabase): Promise<OidcAuthState> {
  if (!db.tables.has('users') || !db.tables.has('groups') || !db.tables.has('experiment_permissions'))
    throw new Error(`${db.name} has no 'users', 'groups' and 'experiment_permissions' tables: not an mlflow-oidc-auth database`);
  // The plugin's alembic keeps its revision in alembic_version (MLflow's basic-auth in alembic_version_auth).
  const revision = db.tables.has('alembic_version') ? (await db.all<{ version_num: string }>('SELECT version_num FROM alembic_version'))[0]?.version_num : undefined;
  const features = FEATURES.filter(([t]) => db.tables.has(t)).map(([, f]) => f);
  const generation = `revision ${revision ?? 'unknown'}: ${features.join(', ') || 'users and grants'}`;

  const userColumns = await columnsOf(db, 'users');
  const users = (
    await db.all<Record<string, unknown>>(
      `SELECT id, username, display_name, is_admin${userColumns.has('is_service_account') ? ', is_service_account' : ''}${userColumns.has('active') ? ', active' : ''} FROM users ORDER BY id`,
    )
  ).map((u) => ({
    id: Number(u.id),
    user: {
      username: String(u.username),
      displayName: u.display_name === null || u.display_name === undefined ? undefined : storableDisplayName(String(u.display_name), '') || undefined,
      isAdmin: bool(u.is_admin),
      isServiceAccount: bool(u.is_service_account),
      active: u.active === undefined || u.active === null ? true : bool(u.active),
    },
  }));
  const userName = new Map(users.map((u) => [u.id, u.user.username]));
  const groupRows = await db.all<{ id: number; group_name: string }>('SELECT id, group_name FROM groups ORDER BY id');
  const groupName = new Map(groupRows.map((g) => [Number(g.id), String(g.group_name)]));
  const members = new Map<string, string[]>(groupRows.map((g) => [String(g.group_name), []]));
  if (db.tables.has('user_groups'))
    for (const m of await db.all<{ user_id: number; group_id: number }>('SELECT user_id, group_id FROM user_groups ORDER BY id')) {
      const user = userName.get(Number(m.user_id));
      const group = groupName.get(Number(m.group_id));
      if (user !== undefined && group !== undefined) members.get(group)!.push(user);
    }
  const granteeOf = (row: Record<string, unknown>, side: 'user' | 'group'): PlanGrantee | undefined => {
    const name = side === 'user' ? userName.get(Number(row.user_id)) : groupName.get(Number(row.group_id));
    return name === undefined ? undefined : { type: side, name };
  };

  const grants: OidcAuthGrant[] = [];
  for (const t of GRANT_TABLES)
    for (const side of ['user', 'group'] as const) {
      const table = side === 'user' ? t.user : t.group;
      if (!db.tables.has(table)) continue;
      const hasWorkspace = (await columnsOf(db, table)).has('workspace');
      const rows = await db.all<Record<string, unknown>>(`SELECT id, ${t.columns.join(', ')}, ${side}_id, permission${hasWorkspace ? ', workspace' : ''} FROM ${table} ORDER BY id`);
      for (const r of rows) {
        const grantee = granteeOf(r, side);
        if (grantee === undefined) continue;
        grants.push({ grantee, kinds: t.kinds, id: t.id(r), permission: String(r.permission), workspace: hasWorkspace ? (r.workspace as string | null) : null, rowId: Number(r.id) });
      }
    }

  const rules: OidcAuthRule[] = [];
  for (const t of RULE_TABLES)
    for (const side of ['user', 'group'] as const) {
      const table = side === 'user' ? t.user : t.group;
      if (!db.tables.has(table)) continue;
      const columns = await columnsOf(db, table);
      const hasWorkspace = columns.has('workspace');
      const hasPrompt = t.promptFlag === true && columns.has('prompt');
      const rows = await db.all<Record<string, unknown>>(
        `SELECT id, regex, priority, ${side}_id, permission${hasWorkspace ? ', workspace' : ''}${hasPrompt ? ', prompt' : ''} FROM ${table} ORDER BY priority, id`,
      );
      for (const r of rows) {
        const grantee = granteeOf(r, side);
        if (grantee === undefined) continue;
        const kinds: readonly ResourceKind[] = hasPrompt ? [bool(r.prompt) ? 'prompt' : 'registered_model'] : t.kinds;
        rules.push({
          grantee,
          kinds,
          regex: String(r.regex),
          priority: Number(r.priority),
          permission: String(r.permission),
          workspace: hasWorkspace ? (r.workspace as string | null) : null,
          rowId: Number(r.id),
        });
      }
    }

  const unread: string[] = [];
  for (const table of WORKSPACE_TABLES) {
    if (!db.tables.has(table)) continue;
    const n = (await db.all<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))[0]?.n ?? 0;
    if (Number(n) > 0) unread.push(`${Number(n)} rows of ${table} (the plugin's permission on a whole workspace, its fallback there; flowgate's workspace standing is not the same rule: grant it with flowgate's workspace grants)`);
  }
  return {
    generation,
    users: users.map((u) => u.user),
    groups: [...members].map(([name, m]) => ({ name, members: m })),
    grants,
    rules,
    unread,
  };
}

async function columnsOf(db: SourceDatabase, table: string): Promise<Set<string>> {
  try {
    return new Set((await db.all<{ name: string }>(`SELECT name FROM pragma_table_info('${table}')`)).map((r) => r.name));
  } catch {
    return new Set(
      (await db.all<{ column_name: string }>(`SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = '${table}'`)).map(
        (r) => r.column_name,
      ),
    );
  }
}
