import type { StoreChangeListener, Following } from './changes.js';
import type { Db } from './database.js';
import { externalChangesPoll } from './external-changes.js';
import { mappingChangesPoll } from './mapping-changes.js';
import { sessionEndsPoll } from './session-ends.js';

/**
 * Another process on the same file (a second flowgate, an operator's sqlite3) committed: polled, since
 * SQLite cannot notify. Its change log names the grants; anything else it changed is not said, so
 * every cached principal, credential and session is dropped. The three logs are read on one timer:
 * an idle process wakes once per interval, not once per log.
 *
 * What each log has seen is taken here, at the call; with `after`, the polling starts once it settles.
 * So a caller reading the store in between (the start-up load) misses nothing committed meanwhile:
 * the first poll delivers it.
 */
export function followSqlite(db: Db, intervalMs: number, listener: StoreChangeListener, after?: Promise<unknown>): Following {
  const policy = externalChangesPoll(db, (grants) => {
    listener.principals();
    listener.sessionsEnded('all');
    // No change log names pattern grants: they are few, so any external change re-reads them.
    listener.patterns();
    listener.grants(grants);
  });
  const mappings = mappingChangesPoll(db, (changes) => listener.mappings(changes));
  // Ending a session moves no policy generation: its own log says which ones ended.
  const sessions = sessionEndsPoll(db, (idHashes) => listener.sessionsEnded(idHashes));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const start = () => {
    if (stopped) return;
    timer = setInterval(poll, intervalMs);
    timer.unref();
  };
  const poll = () => {
    // A throw in a timer ends the process. A poll that failed (a lock held past the busy timeout, an
    // I/O error) has not moved what it saw, so the next tick reads the same changes again.
    for (const look of [policy, mappings, sessions])
      try {
        look();
      } catch {
        /* retried next tick */
      }
  };
  if (after === undefined) start();
  else after.then(start, start);
  return {
    live: () => true,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
    },
  };
}
