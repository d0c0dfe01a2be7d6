import type { Db } from './database.js';

/**
 * Notices commits made to the store by another connection (a second flowgate process on the same
 * file, an operator's sqlite3 session). SQLite's `data_version` changes only for other connections'
 * commits, so this process's own writes never trigger it. Polled: one PRAGMA per interval.
 */
export function watchExternalChanges(db: Db, intervalMs: number, onChange: () => void): { stop(): void } {
  let seen = db.pragma('data_version', { simple: true }) as number;
  const timer = setInterval(() => {
    const now = db.pragma('data_version', { simple: true }) as number;
    if (now === seen) return;
    seen = now;
    onChange();
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
