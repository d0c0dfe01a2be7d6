import type { Db } from './database.js';

/** Rows kept for processes that poll late; past that a process forgets every cached session. */
const KEEP_ENDS = 10_000;

/**
 * Polls the embedded store's log of ended sessions (filled by a trigger on every delete from
 * `sessions`: sign-out, end-sessions, a revoked token, a deleted user, the purge) every `intervalMs`.
 * `onEnds` gets the SHA-256 ids ended since the last poll, this process's own included (forgetting
 * twice is harmless), or `'all'` when the log was pruned past what this process saw. PostgreSQL
 * announces the same deletes by notification instead.
 */
export function watchSessionEnds(db: Db, intervalMs: number, onEnds: (idHashes: readonly string[] | 'all') => void): { stop(): void } {
  const since = db.prepare<[number], { id_hash: string }>('SELECT id_hash FROM session_ends WHERE seq > ? ORDER BY seq');
  const bounds = db.prepare<[], { oldest: number | null; latest: number | null }>('SELECT min(seq) AS oldest, max(seq) AS latest FROM session_ends');
  const prune = db.prepare<[number]>('DELETE FROM session_ends WHERE seq <= ?');
  let seen = bounds.get()?.latest ?? 0;
  const timer = setInterval(() => {
    if (!db.open) return;
    const { oldest, latest } = bounds.get() ?? { oldest: null, latest: null };
    if (latest === null || latest === seen) return;
    if (oldest !== null && oldest > seen + 1) onEnds('all');
    else onEnds(since.all(seen).map((r) => r.id_hash));
    seen = latest;
    if (oldest !== null && latest - oldest > 2 * KEEP_ENDS) prune.run(latest - KEEP_ENDS);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
