import type pg from 'pg';
import { SchemaTooNewError } from './database.js';
import type { Migration } from './migrations.js';
import { VOCABULARY_SINCE, vocabularyStatements } from './vocabulary.js';

/** An arbitrary constant naming flowgate's migration lock among the database's advisory locks. */
const MIGRATION_LOCK = 0x666c6f77;

/**
 * Brings the shared schema up to date. Replicas starting together queue on one advisory lock, so
 * exactly one applies each migration and the others find it done; each migration commits with the
 * version it reached, so a replica killed midway leaves the schema at a whole version.
 */
export async function migratePostgres(pool: pg.Pool, where: string, migrations: readonly Migration[]): Promise<void> {
  const client = await pool.connect();
  try {
    // Waiting for another replica's migration, or a long one, is not a stuck statement: no timeout on
    // this connection, which is closed afterwards rather than returned to the pool.
    await client.query('SET statement_timeout = 0');
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await client.query('CREATE TABLE IF NOT EXISTS flowgate_schema (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)');
      await client.query('INSERT INTO flowgate_schema (id, version) VALUES (1, 0) ON CONFLICT (id) DO NOTHING');
      const current = (await client.query<{ version: number }>('SELECT version FROM flowgate_schema WHERE id = 1')).rows[0]!.version;
      const latest = migrations.at(-1)?.version ?? 0;
      if (current > latest) throw new SchemaTooNewError(where, current, latest);
      for (const m of migrations) {
        if (m.version <= current) continue;
        await client.query('BEGIN');
        try {
          await client.query(m.postgres);
          await client.query('UPDATE flowgate_schema SET version = $1 WHERE id = 1', [m.version]);
          await client.query('COMMIT');
        } catch (e) {
          await client.query('ROLLBACK');
          throw e;
        }
      }
      if (latest >= VOCABULARY_SINCE) for (const statement of vocabularyStatements('postgres')) await client.query(statement);
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    client.release(true);
  }
}
