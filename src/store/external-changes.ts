import { BUSY_TIMEOUT_MS } from './sqlite-busy.js';
import { pragmaNumber, setPragma } from './sqlite-pragmas.js';
import type { ResourceKind, ResourceRef } from '../authz/types.js';
import type { Db } from './database.js';

/** Rows of the grant change log kept for processes that poll late; older ones are pruned. */
const KEEP_CHANGES = 10_000;

/**
 * What another connection changed: the resources whose grants changed (re-read just those), or
 * `all` when the change log no longer reaches back to what this process saw last (re-read everything).
 */
export type ExternalGrantChanges = readonly ResourceRef[] | 'all';

/**
 * Notices policy changes committed to the store by another connection (a second flowgate process
 * on the same file, an operator's sqlite3 session). SQLite's `data_version` moves only for other
 * connections' commits, so this process's own writes never trigger it; the policy generation
 * (bumped by triggers on users, groups, memberships, grants and tokens) tells a policy change from
 * another process's session bookkeeping, which needs no reload. The grant change log (filled by
 * triggers on grants, cascaded deletes included) says which resources to re-read, so a change costs
 * a re-read of those resources instead of the whole grant index. Polled: a PRAGMA and three one-row
 * reads per interval, in one read transaction.
 */
export function watchExternalChanges(db: Db, intervalMs: number, onChange: (grants: ExternalGrantChanges) => void): { stop(): void } {
  const timer = setInterval(externalChangesPoll(db, onChange), intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/** One look at the store, as `watchExternalChanges` takes every interval, for a caller that runs several on one timer. */
export function externalChangesPoll(db: Db, onChange: (grants: ExternalGrantChanges) => void): () => void {
  const generationOf = db.prepare<[], { value: number }>('SELECT value FROM policy_generation WHERE id = 1');
  const lastChange = db.prepare<[], { seq: number | null }>('SELECT max(seq) AS seq FROM grant_changes');
  const oldestChange = db.prepare<[], { seq: number | null }>('SELECT min(seq) AS seq FROM grant_changes');
  const changesSince = db.prepare<[number], { resource_kind: ResourceKind; resource_id: string }>(
    'SELECT DISTINCT resource_kind, resource_id FROM grant_changes WHERE seq > ?',
  );
  const prune = db.prepare<[number]>('DELETE FROM grant_changes WHERE seq <= ?');
  const generation = () => generationOf.get()?.value ?? 0;
  const latest = () => lastChange.get()?.seq ?? 0;

  /*
   * Each look is one read transaction, so one snapshot: read in separate statements, a commit landing
   * between the data_version read and the others was counted as seen (its generation and log rows
   * taken as already known) without the data_version move that says it was another process's.
   */
  const look = db.transaction((seen?: { readonly data: number; readonly generation: number; readonly change: number }) => {
    const data = pragmaNumber(db, 'data_version');
    const now = generation();
    const change = latest();
    const oldest = oldestChange.get()?.seq ?? change;
    const external = seen !== undefined && data !== seen.data && now !== seen.generation;
    return { data, now, change, oldest, external, grants: external && seen ? grantChangesSince(seen.change, change, oldest) : [] };
  });

  const first = look();
  let seen = { data: first.data, generation: first.now, change: first.change };

  function grantChangesSince(seq: number, upTo: number, oldest: number): ExternalGrantChanges {
    if (upTo === seq) return [];
    // Pruned past what this process saw: the log cannot say what changed in between.
    if (oldest > seq + 1) return 'all';
    return changesSince.all(seq).map((r) => ({ kind: r.resource_kind, id: r.resource_id }));
  }

  return () => {
    if (!db.open) return;
    const { data, now, change, oldest, external, grants } = look(seen);
    // Own writes move the generation and the log too: follow them every tick, so they never look external later.
    seen = { data, generation: now, change };
    if (external) onChange(grants);
    // After the change is delivered: `seen` has moved past it, so a prune that throws must not skip it.
    if (change - oldest > 2 * KEEP_CHANGES) pruneIfFree(change - KEEP_CHANGES);
  };

  /*
   * Pruning can wait: while another connection holds the write lock it is left to a later poll, instead
   * of stalling every request for the busy timeout (this is a synchronous call on the event loop).
   */
  function pruneIfFree(upTo: number): void {
    setPragma(db, 'busy_timeout = 0');
    try {
      prune.run(upTo);
    } catch {
      /* busy or failing: the log stays longer, and the next poll tries again */
    } finally {
      setPragma(db, `busy_timeout = ${BUSY_TIMEOUT_MS}`);
    }
  }
}
