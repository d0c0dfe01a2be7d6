import type { StoreChangeListener, Following } from './changes.js';
import type { Db } from './database.js';
import { watchExternalChanges } from './external-changes.js';
import { watchMappingChanges } from './mapping-changes.js';
import { watchSessionEnds } from './session-ends.js';

/**
 * Another process on the same file (a second flowgate, an operator's sqlite3) committed: polled, since
 * SQLite cannot notify. Its change log names the grants; anything else it changed is not said, so
 * every cached principal, credential and session is dropped.
 */
export function followSqlite(db: Db, intervalMs: number, listener: StoreChangeListener): Following {
  const policy = watchExternalChanges(db, intervalMs, (grants) => {
    listener.principals();
    listener.sessionsEnded('all');
    // No change log names pattern grants: they are few, so any external change re-reads them.
    listener.patterns();
    listener.grants(grants);
  });
  const mappings = watchMappingChanges(db, intervalMs, (changes) => listener.mappings(changes));
  // Ending a session moves no policy generation: its own log says which ones ended.
  const sessions = watchSessionEnds(db, intervalMs, (idHashes) => listener.sessionsEnded(idHashes));
  return {
    live: () => true,
    stop: async () => {
      policy.stop();
      mappings.stop();
      sessions.stop();
    },
  };
}
