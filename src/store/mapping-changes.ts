import type { Db } from './database.js';
import type { Sql } from './sql.js';
import { storeLogPoll, watchStoreLog } from './store-log.js';

/**
 * A cached MLflow mapping that changed: which look-up cache, and the key (unused for experiment
 * names; for `gateway`, the generated id of the secret, model definition or endpoint renamed, updated
 * or deleted, whose cached name is forgotten with every cached endpoint-name spelling, or '' for the
 * spellings alone).
 */
export type MappingChange = {
  readonly cache: 'experiment_names' | 'model' | 'trace' | 'dataset' | 'review_queue' | 'gateway';
  readonly key: string;
};

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
  return watchStoreLog<MappingChange>(db, { table: 'mapping_changes', columns: 'cache, key', keep: KEEP_CHANGES }, intervalMs, onChanges);
}

/** One look at the log, for a caller that runs several on one timer. */
export function mappingChangesPoll(db: Db, onChanges: (changes: readonly MappingChange[] | 'all') => void): () => void {
  return storeLogPoll<MappingChange>(db, { table: 'mapping_changes', columns: 'cache, key', keep: KEEP_CHANGES }, onChanges);
}
