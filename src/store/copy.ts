import type { Sql, SqlValue } from './sql.js';

/**
 * What a store holds, in an order that satisfies every foreign key. The change logs and the policy
 * generation are not copied: they describe one store's history, and replicas following the new
 * store start by reading everything.
 */
export const STORE_TABLES = [
  'users',
  'groups',
  'group_members',
  'grants',
  'pattern_grants',
  'access_tokens',
  'audit_log',
  'sessions',
  'oidc_pending_logins',
  'page_token_key',
  'job_owners',
  'legacy_passwords',
  'workspace_rule_grants',
] as const;

/**
 * The tables a copy leaves out, and why: each is remade by the target store itself. A table in
 * neither list fails `test/store/store-copy.test.ts`, so a new table is never silently left behind.
 */
export const TABLES_NOT_COPIED: Readonly<Record<string, string>> = {
  grant_changes: "a change log for other flowgates on the source store: the target's starts empty",
  mapping_changes: "the same, for cached MLflow mappings",
  session_ends: 'the same, for ended sessions',
  policy_generation: 'a counter every change bumps: the target keeps its own',
  resource_kinds: "the registry's kinds, written by the target at every open",
  permission_levels: "the registry's levels, written by the target at every open",
};

/** Tables whose `id` the target must go on counting from (PostgreSQL identities). */
const IDENTITY_TABLES = new Set(['users', 'groups', 'grants', 'pattern_grants', 'access_tokens', 'audit_log', 'sessions']);

const ROWS_PER_STATEMENT = 200;

export interface CopyReport {
  readonly tables: ReadonlyArray<{ readonly table: string; readonly source: number; readonly target: number }>;
  readonly verified: boolean;
}

export class TargetNotEmptyError extends Error {
  constructor(table: string, rows: number) {
    super(`the target store already holds data (${rows} rows in ${table}); copy only into a new, empty store`);
    this.name = 'TargetNotEmptyError';
  }
}

const count = async (sql: Sql, table: string) => (await sql.get<{ n: number }>(`SELECT count(*) AS n FROM ${table}`))!.n;

/**
 * Copies every table in one target transaction (all or nothing), then counts both sides. Both stores
 * are at the same schema version: each was migrated when opened.
 */
export async function copyStore(from: Sql, to: Sql, tables: readonly string[] = STORE_TABLES): Promise<CopyReport> {
  for (const table of tables) {
    const n = await count(to, table);
    if (n > 0) throw new TargetNotEmptyError(table, n);
  }
  await to.transaction(async () => {
    for (const table of tables) {
      const rows = await from.all<Record<string, SqlValue>>(`SELECT * FROM ${table}`);
      if (rows.length === 0) continue;
      const columns = Object.keys(rows[0]!);
      const tuple = `(${columns.map(() => '?').join(', ')})`;
      for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
        const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
        await to.run(
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES ${chunk.map(() => tuple).join(', ')}`,
          chunk.flatMap((r) => columns.map((c) => r[c] ?? null)),
        );
      }
      if (to.dialect === 'postgres' && IDENTITY_TABLES.has(table))
        await to.get(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), (SELECT max(id) FROM ${table}))`);
    }
  });
  const report = [];
  for (const table of tables) report.push({ table, source: await count(from, table), target: await count(to, table) });
  return { tables: report, verified: report.every((r) => r.source === r.target) };
}
