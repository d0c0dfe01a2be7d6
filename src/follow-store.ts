import type { MappingForgetter } from './authz/mapping-forgetter.js';
import { FULL_RELOAD_ABOVE, type PolicyReader } from './authz/policy.js';
import type { ResourceRef } from './authz/types.js';
import type { Logger } from './logging.js';
import type { SessionStore } from './oidc/sessions.js';
import type { PrincipalCache } from './principals/principal-cache.js';
import type { Following } from './store/changes.js';
import type { Store } from './store/store.js';
import type { TokenVerifier } from './tokens/verifier.js';

export interface FollowedCaches {
  readonly policy: PolicyReader;
  readonly verifier: TokenVerifier;
  readonly principals: PrincipalCache;
  readonly sessions: SessionStore;
  /** Built later (it needs MLflow's version); until then no mapping is cached, so none can be stale. */
  readonly mappings: () => MappingForgetter | undefined;
  readonly logger: Logger;
}

/**
 * Reads the policy index (`loaded`), and from then on what other processes change in the store
 * reaches this process's memory: the policy index re-reads the grants named, credentials, principals
 * and ended sessions are dropped, cached MLflow mappings forgotten. Revocations above all must not
 * outlive the next poll or notification.
 */
export function followStore(store: Store, c: FollowedCaches): Following & { readonly loaded: Promise<void>; fresh(): boolean } {
  /*
   * Whether the index may be missing a change: a full re-read asked (a reconnect's catch-up, a change
   * naming many resources) and not yet done, or a re-read that failed and waits for its retry. Each
   * asks a ticket; the index is fresh once a full re-read of a later or equal ticket succeeded.
   */
  let asked = 0;
  let done = 0;
  const reread = (refs: readonly ResourceRef[] | 'all'): Promise<void> => {
    const whole = refs === 'all' || refs.length > FULL_RELOAD_ABOVE;
    const ticket = whole ? ++asked : 0;
    return (whole ? c.policy.reloadAll() : c.policy.storedChanged(refs)).then(
      () => {
        if (whole) done = Math.max(done, ticket);
        c.logger.info(
          { resources: c.policy.resources, reread: whole ? 'all' : refs.length },
          'policy store changed by another process: caches dropped, grants reloaded',
        );
      },
      (err: Error) => {
        // Stale until the retry below (a later ticket) succeeds.
        if (!whole) ++asked;
        c.logger.error({ err: { message: err.message } }, 'grants changed by another process could not be reloaded; re-reading all in 1 s');
        // A grant removed elsewhere must not stay in force here: keep trying until the whole index is fresh.
        setTimeout(() => void reread('all'), 1000).unref();
      },
    );
  };
  const rereadPatterns = (): Promise<void> =>
    c.policy.reloadPatterns().then(
      () => c.logger.info({ patternGrants: c.policy.patternGrants }, 'pattern grants changed by another process: reloaded'),
      (err: Error) => {
        c.logger.error({ err: { message: err.message } }, 'pattern grants changed by another process could not be reloaded; retrying in 1 s');
        // A pattern grant removed elsewhere must not stay in force here.
        setTimeout(() => void rereadPatterns(), 1000).unref();
      },
    );
  const everythingStale = (): void => {
    c.verifier.forgetAll();
    c.principals.invalidate();
    c.sessions.forgetCached('all');
    c.mappings()?.applyExternal('all');
    void rereadPatterns();
    void reread('all');
  };
  /*
   * The feed calls these from a pg notification handler or a timer, where a throw ends the process
   * (every replica at once, as they all hear the same change). A change that could not be applied is
   * one this process may be missing: everything is dropped and re-read instead.
   */
  const guarded =
    <A extends unknown[]>(what: string, apply: (...args: A) => void) =>
    (...args: A): void => {
      try {
        apply(...args);
      } catch (err) {
        c.logger.error({ err: { message: (err as Error).message }, change: what }, 'a change by another process could not be applied; dropping caches and re-reading everything');
        try {
          everythingStale();
        } catch (again) {
          c.logger.error({ err: { message: (again as Error).message } }, 'caches could not be dropped; re-reading everything in 1 s');
          setTimeout(guarded('retry', everythingStale), 1000).unref();
        }
      }
    };
  let loadEnded!: () => void;
  const afterLoad = new Promise<void>((resolve) => (loadEnded = resolve));
  // The feed takes what it has seen now, before the index is read, and delivers only after the read:
  // a change committed while the index was being read (in several statements) is applied, not lost.
  const following = store.follow({
    grants: guarded('grants', (refs) => void reread(refs)),
    principals: guarded('principals', () => {
      c.verifier.forgetAll();
      c.principals.invalidate();
    }),
    patterns: guarded('patterns', () => void rereadPatterns()),
    sessionsEnded: guarded('sessions', (idHashes) => c.sessions.forgetCached(idHashes)),
    mappings: guarded('mappings', (changes) => c.mappings()?.applyExternal(changes)),
  }, afterLoad);
  const loaded = c.policy.reloadAll().finally(loadEnded);
  return { live: following.live, stop: () => following.stop(), loaded, fresh: () => done >= asked };
}
