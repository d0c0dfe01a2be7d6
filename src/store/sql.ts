/** A value a statement parameter or a column can hold in both stores. */
export type SqlValue = string | number | Buffer | null;

export type Dialect = 'sqlite' | 'postgres';

/**
 * The policy store as the repositories see it, the same for SQLite and PostgreSQL. Statements are
 * written once in the subset both understand, with `?` placeholders; integers (ids, counts, epoch
 * milliseconds) come back as numbers from both.
 *
 * A statement made inside `transaction(fn)` — through any repository, across any number of awaits —
 * joins that transaction; a nested `transaction` joins the outer one. Statements made elsewhere
 * meanwhile do not see its uncommitted writes.
 */
export interface Sql {
  readonly dialect: Dialect;
  /** The first row, or undefined. */
  get<T>(text: string, params?: readonly SqlValue[]): Promise<T | undefined>;
  all<T>(text: string, params?: readonly SqlValue[]): Promise<T[]>;
  /** The number of rows changed. */
  run(text: string, params?: readonly SqlValue[]): Promise<number>;
  /** Commits when `fn` resolves, rolls back when it throws (and rethrows). */
  transaction<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Inside a transaction: holds the exclusive lock `name` until the transaction ends, so work every
   * replica does at start (the bootstrap admin) runs once at a time. SQLite's write transactions are
   * exclusive already.
   */
  lock(name: string): Promise<void>;
  /** Answers when the store takes a write (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}
