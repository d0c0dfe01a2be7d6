import type Database from 'better-sqlite3';

/*
 * Several processes may open one SQLite file at the same moment (replicas starting together): what
 * they do at open waits for one another instead of failing on the first busy answer.
 */

/** How long a statement waits for another connection's lock before SQLite answers busy. */
export const BUSY_TIMEOUT_MS = 5000;

/**
 * How often a write lock held past the busy timeout is waited for again at start: another process
 * migrating a large store (a table rebuilt) may hold it for longer than one timeout.
 */
const LOCK_ATTEMPTS = 12;

function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/** `step` again, a little later, while SQLite answers busy at once; up to about the busy timeout. */
export function untilFree<T>(step: () => T): T {
  for (let waited = 0; ; waited += 10) {
    try {
      return step();
    } catch (e) {
      if (!isBusy(e) || waited >= BUSY_TIMEOUT_MS) throw e;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}

/** `step` in a write transaction taken at its start, tried again while another process holds the lock. */
export function whileLocked<T>(db: Database.Database, step: () => T): T {
  const run = db.transaction(step);
  for (let attempt = 1; ; attempt++) {
    try {
      return run.immediate();
    } catch (e) {
      if (!isBusy(e) || attempt >= LOCK_ATTEMPTS) throw e;
    }
  }
}
