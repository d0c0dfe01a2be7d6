import { pragmaNumber, setPragma } from './sqlite-pragmas.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS, type Migration } from './migrations.js';
import type { Sql } from './sql.js';
import { sqliteSql } from './sqlite-sql.js';
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
    setPragma(db, 'journal_mode = WAL');
    setPragma(db, 'foreign_keys = ON');
    setPragma(db, 'busy_timeout = 5000');
    setPragma(db, 'synchronous = NORMAL');
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

function migrate(db: Db, path: string, migrations: readonly Migration[]): void {
  const current = pragmaNumber(db, 'user_version');
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) throw new SchemaTooNewError(path, current, latest);
  for (const m of migrations) {
    if (m.version <= current) continue;
    db.transaction(() => {
      db.exec(m.sqlite);
      setPragma(db, `user_version = ${m.version}`);
    })();
  }
  if (latest >= VOCABULARY_SINCE) db.transaction(() => vocabularyStatements('sqlite').forEach((s) => db.exec(s)))();
}
