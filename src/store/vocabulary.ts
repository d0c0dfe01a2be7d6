import { RESOURCE_KINDS } from '../resources/kinds.js';
import { PERMISSIONS } from '../resources/permissions.js';

/** The migration that made the vocabulary tables. */
export const VOCABULARY_SINCE = 12;

/**
 * The kinds and permission levels the grant tables accept, from the registry: run at every open,
 * after the migrations, so a kind added to `src/resources/kind-table.ts` needs no migration. Values
 * are only ever added (a grant on a kind a newer release knew stays readable after a downgrade).
 */
export function vocabularyStatements(dialect: 'sqlite' | 'postgres'): string[] {
  const list = (values: readonly string[]) => values.map((v) => `('${v.replace(/'/g, "''")}')`).join(', ');
  const ignore = dialect === 'sqlite' ? ['INSERT OR IGNORE INTO', ''] : ['INSERT INTO', ' ON CONFLICT DO NOTHING'];
  return [
    `${ignore[0]} resource_kinds (kind) VALUES ${list(RESOURCE_KINDS)}${ignore[1]}`,
    `${ignore[0]} permission_levels (level) VALUES ${list(PERMISSIONS)}${ignore[1]}`,
  ];
}
