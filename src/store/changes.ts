import type { ResourceRef } from '../authz/types.js';
import type { MappingChange } from './mapping-changes.js';

/**
 * What other flowgates (or operators) changed in the shared store, for this process to drop or
 * re-read what it holds in memory. `'all'`: the feed cannot say what changed (it was pruned, or the
 * connection that carries it was lost), so everything of that kind is stale.
 */
export interface StoreChangeListener {
  /** The grants of these resources changed: re-read them. */
  grants(refs: readonly ResourceRef[] | 'all'): void;
  /** Users, groups, memberships or tokens changed: cached principals and credentials are stale. */
  principals(): void;
  /** Pattern grants changed (or may have): re-read them. */
  patterns(): void;
  /** Browser sessions ended (sign-out, end-sessions, a revoked token, a deleted user): by the SHA-256 of their ids. */
  sessionsEnded(idHashes: readonly string[] | 'all'): void;
  /** Cached MLflow mappings (names, tags, traces) changed. */
  mappings(changes: readonly MappingChange[] | 'all'): void;
}

export interface Following {
  /** False while the feed is cut off (PostgreSQL unreachable): this process may be missing changes. */
  readonly live: () => boolean;
  stop(): Promise<void>;
}
