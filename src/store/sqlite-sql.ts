import { pragmaNumber, setPragma } from './sqlite-pragmas.js';
import type Database from 'better-sqlite3';
import { transientStorage } from './transient-storage.js';
import type { Sql, SqlValue } from './sql.js';
import { rethrowStoreError, storeError } from './store-errors.js';

/**
 * The embedded store behind the async `Sql` face. better-sqlite3 answers synchronously, so a
 * statement costs no thread hop; the promise only keeps the face the same as PostgreSQL's.
 *
 * One connection serves every request, so a transaction that awaits between its statements must
 * keep everyone else's statements out until it ends: statements outside it wait for it, and the
 * next transaction waits its turn.
 */
export function sqliteSql(db: Database.Database): Sql & { readonly db: Database.Database } {
  const statements = new Map<string, Database.Statement>();
  const inTransaction = transientStorage<object>();
  let active: { readonly marker: object; readonly done: Promise<void> } | undefined;

  const statement = (text: string): Database.Statement => {
    let s = statements.get(text);
    if (s === undefined) statements.set(text, (s = db.prepare(text)));
    return s;
  };

  /** Runs `op` now unless another caller's transaction is open; then after it ends. */
  async function whenFree<T>(op: () => T): Promise<T> {
    while (active !== undefined && inTransaction.getStore() !== active.marker) await active.done;
    try {
      return op();
    } catch (e) {
      return rethrowStoreError(e);
    }
  }

  const params = (p: readonly SqlValue[] | undefined) => (p ?? []) as unknown[];

  /** Now when no transaction is open (a settled promise, no queueing), else once it ends; errors reject, never throw. */
  function perform<T>(op: () => T): Promise<T> {
    if (active !== undefined) return whenFree(op);
    try {
      return Promise.resolve(op());
    } catch (e) {
      return Promise.reject(storeError(e));
    }
  }

  return {
    dialect: 'sqlite',
    db,
    get<T>(text: string, p?: readonly SqlValue[]): Promise<T | undefined> {
      return perform(() => statement(text).get(...params(p)) as T | undefined);
    },
    all<T>(text: string, p?: readonly SqlValue[]): Promise<T[]> {
      return perform(() => statement(text).all(...params(p)) as T[]);
    },
    run(text: string, p?: readonly SqlValue[]): Promise<number> {
      const op = () => {
        const s = statement(text);
        // A statement with RETURNING is a reader to better-sqlite3: step it through all.
        return s.reader ? s.all(...params(p)).length : s.run(...params(p)).changes;
      };
      return perform(op);
    },
    async transaction<T>(fn: () => Promise<T>): Promise<T> {
      if (active !== undefined && inTransaction.getStore() === active.marker) return fn();
      while (active !== undefined) await active.done;
      let end!: () => void;
      const marker = {};
      active = { marker, done: new Promise<void>((resolve) => (end = resolve)) };
      try {
        db.exec('BEGIN IMMEDIATE');
        try {
          const result = await inTransaction.run(marker, fn);
          db.exec('COMMIT');
          return result;
        } catch (e) {
          if (db.inTransaction) db.exec('ROLLBACK');
          throw e;
        }
      } catch (e) {
        // SQLITE_BUSY past the busy timeout, SQLITE_FULL at COMMIT, …: 503, not a stack trace.
        return rethrowStoreError(e);
      } finally {
        active = undefined;
        end();
      }
    },
    async lock(): Promise<void> {
      if (active === undefined || inTransaction.getStore() !== active.marker) throw new Error('lock() outside a transaction');
    },
    async ping(): Promise<void> {
      // A write that reaches the file: taking the write lock alone succeeds on a full disk or a
      // read-only mount. The header's user version is written back unchanged (every table's rows
      // belong to someone else).
      await this.transaction(async () => {
        setPragma(db, `user_version = ${pragmaNumber(db, 'user_version')}`);
      });
    },
    async close(): Promise<void> {
      while (active !== undefined) await active.done;
      if (db.open) db.close();
    },
  };
}
