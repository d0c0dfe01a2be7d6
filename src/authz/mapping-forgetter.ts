import type { MappingChange, MappingChanges } from '../store/mapping-changes.js';
import type { CachedMlflowLookups } from './mlflow-lookups.js';
import { qualify, splitQualified } from '../workspaces/names.js';
import { currentWorkspace, inWorkspace } from '../workspaces/request-workspace.js';

/**
 * Forgets a cached MLflow mapping here and, through the store's change log, in every other flowgate
 * on the same store. The one place that knows which look-up cache each change clears.
 */
export function createMappingForgetter(lookups: CachedMlflowLookups, log?: MappingChanges, onLogError?: (err: Error) => void) {
  function apply(change: MappingChange): void {
    switch (change.cache) {
      case 'experiment_names':
        return lookups.invalidateExperimentNames();
      case 'model':
        return lookups.invalidateModel(change.key);
      case 'trace':
        return lookups.invalidateTrace(change.key);
      case 'dataset':
        return lookups.invalidateDataset(change.key);
      case 'review_queue':
        return lookups.invalidateReviewQueue(change.key);
      case 'gateway':
        return lookups.invalidateGateway(change.key === '' ? undefined : change.key);
    }
  }
  return {
    /** Before MLflow makes the change: this process only. */
    forgetHere(changes: readonly MappingChange[]): void {
      changes.forEach(apply);
    },
    /**
     * After MLflow made the change: here at once, and in every flowgate on the store once the log
     * entry is written (the response does not wait for it).
     */
    forget(change: MappingChange): void {
      apply(change);
      // Logged with its workspace, so the other flowgates forget that workspace's entry.
      const logged = change.key === '' ? change : { ...change, key: qualify(currentWorkspace(), change.key) };
      log?.record(logged).catch((err: Error) => onLogError?.(err));
    },
    /** What another flowgate recorded (or `all` when the log no longer reaches back far enough). */
    applyExternal(changes: readonly MappingChange[] | 'all'): void {
      if (changes === 'all') lookups.invalidateMutable();
      else
        for (const change of changes) {
          if (change.key === '') apply(change);
          else {
            const { workspace, id } = splitQualified(change.key);
            inWorkspace(workspace, () => apply({ ...change, key: id }));
          }
        }
    },
  };
}

export type MappingForgetter = ReturnType<typeof createMappingForgetter>;
