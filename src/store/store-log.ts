import type { Db } from './database.js';

/**
 * Polls a log table of the embedded store (rows numbered by `seq`, filled by this and other processes)
 * every `intervalMs`: `onRows` gets the rows (their `columns`) written since the last poll, in order
 * and this process's own included, or `'all'` when the log was pruned past what this process saw.
 * Once the log holds twice `keep` rows, all but the last `keep` are pruned.
 */
export function watchStoreLog<Row>(
  db: Db,
  log: { readonly table: string; readonly columns: string; readonly keep: number },
  intervalMs: number,
  onRows: (rows: readonly Row[] | 'all') => void,
): { stop(): void } {
  const timer = setInterval(storeLogPoll(db, log, onRows), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** One look at the log, as `watchStoreLog` takes every interval, for a caller that runs several on one timer. */
export function storeLogPoll<Row>(
  db: Db,
  log: { readonly table: string; readonly columns: string; readonly keep: number },
  onRows: (rows: readonly Row[] | 'all') => void,
): () => void {
  const since = db.prepare<[number], Row>(`SELECT ${log.columns} FROM ${log.table} WHERE seq > ? ORDER BY seq`);
  const bounds = db.prepare<[], { oldest: number | null; latest: number | null }>(`SELECT min(seq) AS oldest, max(seq) AS latest FROM ${log.table}`);
  const prune = db.prepare<[number]>(`DELETE FROM ${log.table} WHERE seq <= ?`);
  let seen = bounds.get()?.latest ?? 0;
  return () => {
    if (!db.open) return;
    const { oldest, latest } = bounds.get() ?? { oldest: null, latest: null };
    if (latest === null || latest === seen) return;
    if (oldest !== null && oldest > seen + 1) onRows('all');
    else onRows(since.all(seen));
    seen = latest;
    if (oldest !== null && latest - oldest > 2 * log.keep) prune.run(latest - log.keep);
  };
}
