import { pragmaNumber, setPragma } from './sqlite-pragmas.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS, type Migration } from './migrations.js';
import type { Sql } from './sql.js';
import { sqliteSql } from './sqlite-sql.js';
import { BUSY_TIMEOUT_MS, untilFree, whileLocked } from './sqlite-busy.js';
import { VOCABULARY_SINCE, vocabularyStatements } from './vocabulary.js';

export type Db = Database.Database;

export class SchemaTooNewError extends Error {
  constructor(where: string, found: number, known: number) {
    super(
      `the policy store ${where} has schema version ${found}, newer than this flowgate knows (${known}); ` +
        'run the flowgate release that wrote it, or restore a backup',
    );
    this.name = 'SchemaTooNewError';
  }
}

/** Opens the embedded policy store and brings its schema up to date; the only module that owns the file. */
export function openDatabase(path: string, migrations: readonly Migration[] = MIGRATIONS): Db {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Database(path);
  try {
    setPragma(db, `busy_timeout = ${BUSY_TIMEOUT_MS}`);
    // Switching a new file to WAL needs it to itself, and SQLite answers busy at once (no busy
    // timeout) while another process starting beside this one holds it.
    untilFree(() => setPragma(db, 'journal_mode = WAL'));
    setPragma(db, 'foreign_keys = ON');
    // An acknowledged revoke must survive a power loss; NORMAL in WAL mode may roll back the last
    // commits. FULL costs a sync of the log per commit, and the store's writes are few.
    setPragma(db, 'synchronous = FULL');
    migrate(db, path, migrations);
    return db;
  } catch (e) {
    db.close();
    throw e;
  }
}

/** The embedded store as the repositories use it. */
export function openSqliteStore(path: string, migrations: readonly Migration[] = MIGRATIONS): Sql & { readonly db: Db } {
  return sqliteSql(openDatabase(path, migrations));
}

/*
 * Each step reads the schema version inside its own write transaction: another process starting on
 * the same file may have migrated it since (read outside, both processes ran the same migration, and
 * the second failed on a table that already existed).
 */
function migrate(db: Db, path: string, migrations: readonly Migration[]): void {
  const latest = migrations.at(-1)?.version ?? 0;
  for (let more = true; more; )
    more = whileLocked(db, () => {
      const current = pragmaNumber(db, 'user_version');
      if (current > latest) throw new SchemaTooNewError(path, current, latest);
      const next = migrations.find((m) => m.version > current);
      if (next !== undefined) {
        db.exec(next.sqlite);
        setPragma(db, `user_version = ${next.version}`);
        return true;
      }
      if (latest >= VOCABULARY_SINCE) vocabularyStatements('sqlite').forEach((s) => db.exec(s));
      return false;
    });
}
