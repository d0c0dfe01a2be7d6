import type { Db } from './database.js';
import { storeLogPoll, watchStoreLog } from './store-log.js';

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
  return watchStoreLog<{ id_hash: string }>(db, { table: 'session_ends', columns: 'id_hash', keep: KEEP_ENDS }, intervalMs, (rows) =>
    onEnds(rows === 'all' ? 'all' : rows.map((r) => r.id_hash)),
  );
}

/** One look at the log, for a caller that runs several on one timer. */
export function sessionEndsPoll(db: Db, onEnds: (idHashes: readonly string[] | 'all') => void): () => void {
  return storeLogPoll<{ id_hash: string }>(db, { table: 'session_ends', columns: 'id_hash', keep: KEEP_ENDS }, (rows) =>
    onEnds(rows === 'all' ? 'all' : rows.map((r) => r.id_hash)),
  );
}
