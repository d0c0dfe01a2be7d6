import type { Db } from './database.js';
import type { Sql } from './sql.js';

/** A cached MLflow mapping that changed: which look-up cache, and the key (unused for experiment names). */
export type MappingChange = { readonly cache: 'experiment_names' | 'model' | 'trace' | 'dataset' | 'review_queue'; readonly key: string };

/** Rows kept for processes that poll late; past that a process forgets every mapping. */
const KEEP_CHANGES = 10_000;

/**
 * The log of MLflow mappings a flowgate saw change (a rename, a re-tag, a trace written), so every
 * flowgate on the same store forgets them too: each process applies the rows after the last one it
 * saw, its own included (forgetting twice is harmless).
 */
export function createMappingChanges(sql: Sql) {
  return {
    record(change: MappingChange): Promise<void> {
      return sql.run('INSERT INTO mapping_changes (cache, key) VALUES (?, ?)', [change.cache, change.key]).then(() => undefined);
    },
  };
}

export type MappingChanges = ReturnType<typeof createMappingChanges>;

/**
 * Polls the embedded store's log every `intervalMs`; `onChanges` gets the rows in order, or `'all'`
 * when the log was pruned past what this process saw.
 */
export function watchMappingChanges(db: Db, intervalMs: number, onChanges: (changes: readonly MappingChange[] | 'all') => void): { stop(): void } {
  const since = db.prepare<[number], { seq: number; cache: MappingChange['cache']; key: string }>(
    'SELECT seq, cache, key FROM mapping_changes WHERE seq > ? ORDER BY seq',
  );
  const bounds = db.prepare<[], { oldest: number | null; latest: number | null }>('SELECT min(seq) AS oldest, max(seq) AS latest FROM mapping_changes');
  const prune = db.prepare<[number]>('DELETE FROM mapping_changes WHERE seq <= ?');
  let seen = bounds.get()?.latest ?? 0;
  const timer = setInterval(() => {
    if (!db.open) return;
    const { oldest, latest } = bounds.get() ?? { oldest: null, latest: null };
    if (latest === null || latest === seen) return;
    if (oldest !== null && oldest > seen + 1) onChanges('all');
    else onChanges(since.all(seen).map(({ cache, key }) => ({ cache, key })));
    seen = latest;
    if (oldest !== null && latest - oldest > 2 * KEEP_CHANGES) prune.run(latest - KEEP_CHANGES);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
