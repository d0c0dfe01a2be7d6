import { describe, expect, it } from 'vitest';
import type { GrantsRepo, IndexedGrant } from '../../src/authz/grants-repo.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import type { ResourceRef } from '../../src/authz/types.js';
import { followStore } from '../../src/follow-store.js';
import type { Logger } from '../../src/logging.js';
import { BY_RANK } from '../../src/resources/permissions.js';
import { RESOURCE_KINDS } from '../../src/resources/kinds.js';
import type { StoreChangeListener } from '../../src/store/changes.js';
import type { Store } from '../../src/store/store.js';

/**
 * What another process changed reaches this one through `followStore`'s listener, called from a pg
 * notification handler or a timer: nothing it is handed may throw out of it (that ends the process,
 * on every replica at once), and a change naming very many resources is one full reload, not one
 * statement per resource.
 */
const EXPERIMENT = RESOURCE_KINDS.indexOf('experiment');
const READ = BY_RANK.indexOf('READ');

/** A repository over `stored.rows`, which a test replaces to play another process's commit. */
function fakeGrants(rows: IndexedGrant[]) {
  const calls = { pages: 0, resources: 0 };
  const stored = { rows };
  const repo = {
    async *pages() {
      calls.pages++;
      yield stored.rows.slice();
    },
    async onResourceIndexed(_kind: string, id: string) {
      calls.resources++;
      return stored.rows.filter((r) => r.resource_id === id);
    },
  } as unknown as GrantsRepo;
  return { repo, calls, stored };
}

function followed(policy: ReturnType<typeof createPolicyReader>, overrides: { invalidate?: () => void } = {}) {
  let listener!: StoreChangeListener;
  const store = { follow: (l: StoreChangeListener) => ((listener = l), { live: () => true, stop: async () => undefined }) } as unknown as Store;
  const errors: string[] = [];
  const dropped = { tokens: 0, principals: 0, sessions: 0 };
  const logger = { info() {}, warn() {}, error: (_o: unknown, m: string) => void errors.push(m) } as unknown as Logger;
  const { loaded, fresh } = followStore(store, {
    policy,
    verifier: { forgetAll: () => void dropped.tokens++ } as never,
    principals: { invalidate: overrides.invalidate ?? (() => void dropped.principals++) } as never,
    sessions: { forgetCached: () => void dropped.sessions++ } as never,
    mappings: () => undefined,
    logger,
  });
  return { listener, errors, dropped, loaded, fresh };
}

/** A reload runs on its own after the listener returns: waited for by what it does, never by a fixed pause (a loaded CI machine takes longer). */
const until = (check: () => unknown) => expect.poll(check, { timeout: 10_000 });

describe('following another process’s changes', () => {
  it('answers a change naming 200k resources with one full reload, throwing nothing', async () => {
    const kept = [{ kind: EXPERIMENT, resource_id: 'kept', grantee: 1, grant_rank: READ }];
    // 200k resources granted to a group, which another process then deletes.
    const group = Array.from({ length: 200_000 }, (_, i) => ({ kind: EXPERIMENT, resource_id: String(i), grantee: -1, grant_rank: READ }));
    const { repo, calls, stored } = fakeGrants([...kept, ...group]);
    const policy = createPolicyReader(repo);
    const { listener, loaded } = followed(policy);
    await loaded;
    expect(policy.resources).toBe(200_001);
    stored.rows = kept;
    calls.pages = 0;

    const refs: ResourceRef[] = Array.from({ length: 200_000 }, (_, i) => ({ kind: 'experiment', id: String(i) }) as ResourceRef);
    expect(() => listener.grants(refs)).not.toThrow();
    await until(() => policy.resources).toBe(1);
    expect(calls.pages).toBe(1);
    expect(calls.resources).toBe(0);
    expect(policy.resources).toBe(1);
  });

  it('re-reads a few resources one by one', async () => {
    const { repo, calls } = fakeGrants([{ kind: EXPERIMENT, resource_id: '1', grantee: 1, grant_rank: READ }]);
    const policy = createPolicyReader(repo);
    const { listener, loaded } = followed(policy);
    await loaded;
    calls.pages = 0;
    listener.grants([{ kind: 'experiment', id: '1' } as ResourceRef, { kind: 'experiment', id: '2' } as ResourceRef]);
    await until(() => calls.resources).toBe(2);
    expect(calls).toEqual({ pages: 0, resources: 2 });
  });

  it('drops every cache and reloads everything when applying a change throws, instead of throwing', async () => {
    const { repo, calls } = fakeGrants([]);
    const policy = createPolicyReader(repo);
    let broken = true;
    const { listener, errors, dropped, loaded } = followed(policy, {
      invalidate: () => {
        if (broken) {
          broken = false;
          throw new Error('cache in a bad state');
        }
      },
    });
    await loaded;
    calls.pages = 0;
    expect(() => listener.principals()).not.toThrow();
    await until(() => calls.pages).toBe(1);
    expect(errors.join('\n')).toContain('could not be applied');
    expect(dropped.tokens).toBe(2);
    expect(dropped.sessions).toBe(1);
    expect(calls.pages).toBe(1);
  });

  it('says the index is not fresh while a whole re-read is asked or a failed re-read waits for its retry, and fresh once one succeeds', async () => {
    const { repo, stored } = fakeGrants([{ kind: EXPERIMENT, resource_id: '1', grantee: 1, grant_rank: READ }]);
    let failing = false;
    let release: (() => void) | undefined;
    const gated = {
      ...repo,
      async *pages() {
        if (failing) throw new Error('store unreachable');
        if (release === undefined) await new Promise<void>((r) => (release = r));
        yield* repo.pages();
      },
      onResourceIndexed: async (kind: string, id: string) => {
        if (failing) throw new Error('store unreachable');
        return repo.onResourceIndexed(kind as never, id);
      },
    } as unknown as GrantsRepo;
    const policy = createPolicyReader(gated);
    const f = followed(policy);
    release!();
    await f.loaded;
    expect(f.fresh()).toBe(true);
    // A reconnect's catch-up: stale until the whole re-read ends.
    release = undefined;
    f.listener.grants('all');
    // The re-read has begun (it waits on `release`).
    await until(() => release !== undefined).toBe(true);
    expect(f.fresh()).toBe(false);
    release!();
    await until(() => f.fresh()).toBe(true);
    // A re-read that fails: stale until its retry (a whole re-read, 1 s later) succeeds.
    failing = true;
    f.listener.grants([{ kind: 'experiment', id: '1' } as ResourceRef]);
    await until(() => f.fresh()).toBe(false);
    failing = false;
    stored.rows = [];
    await expect.poll(() => f.fresh(), { timeout: 3000 }).toBe(true);
  });
});
