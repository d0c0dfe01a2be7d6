import type { MappingForgetter } from './authz/mapping-forgetter.js';
import type { PolicyReader } from './authz/policy.js';
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
 * What other processes change in the store reaches this process's memory: the policy index re-reads
 * the grants named, credentials, principals and ended sessions are dropped, cached MLflow mappings
 * forgotten. Revocations above all must not outlive the next poll or notification.
 */
export function followStore(store: Store, c: FollowedCaches): Following {
  const reread = (refs: readonly ResourceRef[] | 'all'): Promise<void> =>
    (refs === 'all' ? c.policy.reloadAll() : c.policy.storedChanged(...refs)).then(
      () =>
        c.logger.info(
          { resources: c.policy.resources, reread: refs === 'all' ? 'all' : refs.length },
          'policy store changed by another process: caches dropped, grants reloaded',
        ),
      (err: Error) => {
        c.logger.error({ err: { message: err.message } }, 'grants changed by another process could not be reloaded; re-reading all in 1 s');
        // A grant removed elsewhere must not stay in force here: keep trying until the whole index is fresh.
        setTimeout(() => void reread('all'), 1000).unref();
      },
    );
  const rereadPatterns = (): Promise<void> =>
    c.policy.reloadPatterns().then(
      () => c.logger.info({ patternGrants: c.policy.patternGrants }, 'pattern grants changed by another process: reloaded'),
      (err: Error) => {
        c.logger.error({ err: { message: err.message } }, 'pattern grants changed by another process could not be reloaded; retrying in 1 s');
        // A pattern grant removed elsewhere must not stay in force here.
        setTimeout(() => void rereadPatterns(), 1000).unref();
      },
    );
  return store.follow({
    grants: (refs) => void reread(refs),
    principals: () => {
      c.verifier.forgetAll();
      c.principals.invalidate();
    },
    patterns: () => void rereadPatterns(),
    sessionsEnded: (idHashes) => c.sessions.forgetCached(idHashes),
    mappings: (changes) => c.mappings()?.applyExternal(changes),
  });
}
