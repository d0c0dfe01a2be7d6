import { parseId, type ScimBackendDeps } from './backend-deps.js';

export type ScimResourceName = 'Users' | 'Groups';

/** Runs `fn` as the only change to one SCIM resource, on every flowgate on the store. */
export type OneAtATime = <T>(resource: ScimResourceName, id: string, deleting: boolean, fn: () => Promise<T>) => Promise<T>;

/**
 * A SCIM `PATCH` is a read-modify-write: scimmy reads the resource, applies the operations to what
 * it read and writes the whole result back through the replace handler (`PUT`'s). Two at once on one
 * resource each write back what they read, so the later undoes the earlier: a member one removed
 * comes back with the other's addition (and keeps the group's grants), a user one disabled is
 * enabled again by the other's change of displayName. Identity providers send no `If-Match`, and a
 * `412` would fail their sync rather than be retried.
 *
 * So a change to one resource (`PUT`, `PATCH`, `DELETE`, its `If-Match` check included) runs from its
 * read to its last write in one store transaction holding a lock named after the resource: on
 * PostgreSQL a transaction-scoped advisory lock, which every flowgate on the database takes; on
 * SQLite the write transaction itself, which is exclusive. Within a process the changes to one
 * resource also queue before they take a connection, so a burst on one group holds one pooled
 * connection rather than one per request.
 *
 * What the change told this process's caches inside the transaction was told before it committed:
 * another connection may have read (and cached) the row as it was meanwhile. They are told again
 * once the transaction ends, committed or not, and a deletion's policy reload waits until then (a
 * full reload inside the transaction would hold the lock, and on SQLite the whole store, for its length).
 */
export function resourceLocks(d: Pick<ScimBackendDeps, 'sql' | 'principalsChanged' | 'forgetUser' | 'policyChanged'>): OneAtATime {
  const tails = new Map<string, Promise<void>>();

  /** `fn` after every earlier call with the same key (in this process) has ended. */
  async function inTurn<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const before = tails.get(key);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = before === undefined ? mine : before.then(() => mine);
    tails.set(key, tail);
    try {
      if (before !== undefined) await before;
      return await fn();
    } finally {
      release();
      if (tails.get(key) === tail) tails.delete(key);
    }
  }

  return async function oneAtATime<T>(resource: ScimResourceName, id: string, deleting: boolean, fn: () => Promise<T>): Promise<T> {
    // An id that is no flowgate id names nothing (fn answers 404): no lock, no key of the client's making.
    const n = parseId(id);
    if (n === undefined) return fn();
    const key = `scim:${resource}:${n}`;
    try {
      return await inTurn(key, () =>
        d.sql.transaction(async () => {
          await d.sql.lock(key);
          return fn();
        }),
      );
    } finally {
      if (resource === 'Users') d.forgetUser(n);
      d.principalsChanged();
      if (deleting) await d.policyChanged();
    }
  };
}
