import type { Db } from './database.js';

/**
 * Notices policy changes committed to the store by another connection (a second flowgate process
 * on the same file, an operator's sqlite3 session). SQLite's `data_version` moves only for other
 * connections' commits, so this process's own writes never trigger it; the policy generation
 * (bumped by triggers on users, groups, memberships, grants and tokens) tells a policy change from
 * another process's session bookkeeping, which needs no reload. Polled: a PRAGMA and a one-row
 * read per interval.
 */
export function watchExternalChanges(db: Db, intervalMs: number, onChange: () => void): { stop(): void } {
  const generationOf = db.prepare<[], { value: number }>('SELECT value FROM policy_generation WHERE id = 1');
  const generation = () => generationOf.get()?.value ?? 0;
  let seenData = db.pragma('data_version', { simple: true }) as number;
  let seenGeneration = generation();
  const timer = setInterval(() => {
    const data = db.pragma('data_version', { simple: true }) as number;
    const now = generation();
    const external = data !== seenData && now !== seenGeneration;
    // Own writes move the generation too: follow it every tick, so they never look external later.
    seenData = data;
    seenGeneration = now;
    if (external) onChange();
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
