import { shownUrl } from '../shown-url.js';
import type { Following, StoreChangeListener } from './changes.js';
import { openSqliteStore } from './database.js';
import { MIGRATIONS } from './migrations.js';
import type { Sql } from './sql.js';
import { followSqlite } from './sqlite-follow.js';
import { hasRoomToWrite } from './sqlite-room.js';

export interface StoreOptions {
  /** The embedded store's file, used unless `databaseUrl` is set. */
  readonly dbPath: string;
  /** `postgres://…`: the store every replica shares. */
  readonly databaseUrl?: string | undefined;
  /** SQLite: how often to look for other processes' commits; PostgreSQL: the catch-up interval. 0: never. */
  readonly watchMs: number;
  readonly postgres?: {
    readonly poolSize: number;
    readonly statementTimeoutMs: number;
    readonly connectTimeoutMs: number;
    /** Client-side limit per statement (the wait for a connection included); unset: the statement timeout + 1 s. */
    readonly queryTimeoutMs?: number | undefined;
    readonly caCertificate?: string | undefined;
  };
  /** Connection trouble worth a log line (never with credentials). */
  readonly onError?: (message: string, err: Error) => void;
  /** The feed of other replicas' changes was lost or regained. */
  readonly onFollowState?: (live: boolean) => void;
}

/** The policy store: SQL for the repositories, and the feed of what others change in it. */
export interface Store {
  readonly sql: Sql;
  /** For logs and errors: the file, or the PostgreSQL URL without its password. */
  readonly location: string;
  /**
   * Delivers what others commit from this call on. With `after`, delivery starts once it settles, and
   * what was committed in between is delivered then: a reader of the store started after this call
   * and awaited by `after` cannot miss a change.
   */
  follow(listener: StoreChangeListener, after?: Promise<unknown>): Following;
  /** Takes a write (SQLite: and its filesystem has room for more), and (PostgreSQL) the change feed is connected. */
  ready(): Promise<boolean>;
  close(): Promise<void>;
}

/** A URL safe to print: the password replaced. */
export function redactedUrl(url: string): string {
  return shownUrl(url, 'postgres://(unparsable URL)');
}

export async function openStore(o: StoreOptions): Promise<Store> {
  if (o.databaseUrl !== undefined) return (await import('./postgres-store.js')).openPostgresStore(o, o.databaseUrl, MIGRATIONS);
  const sql = openSqliteStore(o.dbPath);
  return {
    sql,
    location: o.dbPath,
    follow: (listener, after) => (o.watchMs > 0 ? followSqlite(sql.db, o.watchMs, listener, after) : { live: () => true, stop: async () => undefined }),
    ready: async () => {
      try {
        await sql.ping();
        return await hasRoomToWrite(o.dbPath);
      } catch {
        return false;
      }
    },
    close: () => sql.close(),
  };
}
