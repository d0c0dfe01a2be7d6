import type Database from 'better-sqlite3';

/*
 * better-sqlite3 finalizes a statement when it is garbage collected, and on Node 24 that finalizer can
 * abort the process (`RemoveEnvironmentCleanupHook: Assertion failed: (env) != nullptr`) when the
 * collection runs outside a JavaScript context. `db.pragma()` prepares a new statement at every call,
 * so the store never uses it: pragmas are set with `exec` (no statement object) and read through one
 * statement per connection, kept as long as the connection.
 */

const readers = new WeakMap<Database.Database, Map<string, Database.Statement>>();

/** The value of a numeric pragma (`user_version`, `data_version`). */
export function pragmaNumber(db: Database.Database, name: 'user_version' | 'data_version'): number {
  let own = readers.get(db);
  if (own === undefined) readers.set(db, (own = new Map()));
  let read = own.get(name);
  if (read === undefined) own.set(name, (read = db.prepare(`PRAGMA ${name}`).pluck()));
  return Number(read.get());
}

/** Sets a pragma (its text is flowgate's own, never a caller's). */
export function setPragma(db: Database.Database, setting: string): void {
  db.exec(`PRAGMA ${setting}`);
}
