import { pragmaNumber, setPragma } from './sqlite-pragmas.js';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
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

/**
 * A store to read from without touching it: a consistent snapshot of the file (SQLite's online backup,
 * so a flowgate still writing to it is no harm), brought up to date in a temporary folder that goes
 * with `close`. Opening the file itself would migrate it in place, under an older flowgate that may
 * still be serving from it.
 */
export async function openSqliteSnapshot(path: string, migrations: readonly Migration[] = MIGRATIONS): Promise<Sql & { readonly db: Db }> {
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-snapshot-'));
  try {
    const source = new Database(path, { readonly: true, fileMustExist: true });
    try {
      setPragma(source, `busy_timeout = ${BUSY_TIMEOUT_MS}`);
      await source.backup(join(dir, 'store.db'));
    } finally {
      source.close();
    }
    const sql = openSqliteStore(join(dir, 'store.db'), migrations);
    return {
      ...sql,
      close: async () => {
        try {
          await sql.close();
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
    };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
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
