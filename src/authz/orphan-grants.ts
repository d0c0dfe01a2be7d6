import { keyedInWorkspace, KINDS, lookupCall } from '../resources/kinds.js';
import { splitQualified } from '../workspaces/names.js';
import { inWorkspace } from '../workspaces/request-workspace.js';
import type { UpstreamJson } from '../upstream/json-client.js';
import type { GrantWriter } from './grant-writer.js';
import type { GrantsRepo } from './grants-repo.js';
import type { ResourceRef } from './types.js';

/** Whether MLflow still has a resource: `undefined` when it could not tell (an outage), which keeps the grants. */
export type ExistenceCheck = (ref: ResourceRef) => Promise<boolean | undefined>;

/**
 * Asks MLflow about the resource itself, through its kind's look-up: an experiment marked deleted
 * still exists (it can be restored, and its grants with it); only MLflow's RESOURCE_DOES_NOT_EXIST
 * counts as gone.
 */
export function mlflowExistence(upstream: UpstreamJson): ExistenceCheck {
  return async (ref) => {
    const lookup = KINDS[ref.kind].lookup;
    // A kind MLflow gets only by its generated id: its list (one page holds them all) has the name or not.
    if ('list' in lookup) {
      const answer = await upstream.call('GET', lookup.path, {});
      if (answer.status < 200 || answer.status >= 300) return undefined;
      const rows = ((answer.json as Record<string, unknown> | undefined)?.[lookup.list] ?? []) as ReadonlyArray<Record<string, unknown>>;
      return rows.some((row) => row[lookup.nameField] === ref.id);
    }
    // A kind MLflow gets by its id in the path (a Skill: `…/skills/@<organization>/<name>`).
    // A scorer by its experiment and name (`<experiment_id>/<name>`): an id that names none names nothing MLflow has.
    const call = 'inPath' in lookup || 'experiment' in lookup ? lookupCall(ref.kind, ref.id) : { path: lookup.path, query: { [lookup.param]: ref.id } };
    if (call === undefined) return false;
    const answer = await upstream.call('GET', call.path, { ...call.query });
    if (answer.status >= 200 && answer.status < 300) return true;
    const code = (answer.json as { error_code?: unknown } | undefined)?.error_code;
    return answer.status === 404 && code === 'RESOURCE_DOES_NOT_EXIST' ? false : undefined;
  };
}

export interface PruneReport {
  readonly checked: number;
  readonly orphans: readonly ResourceRef[];
  /** Resources MLflow could not answer for: left alone. */
  readonly unknown: readonly ResourceRef[];
}

/**
 * Removes the grants of resources MLflow no longer has, so a later resource given the same id or
 * name (SQLite hands experiment ids out again after `mlflow gc`) never inherits them. Run after
 * `mlflow gc`; flowgate also prunes an id's stale grants when MLflow hands it out again.
 */
export async function pruneOrphanGrants(deps: {
  readonly grants: GrantsRepo;
  readonly writer: GrantWriter;
  readonly exists: ExistenceCheck;
  readonly actor: string;
  readonly dryRun: boolean;
  readonly concurrency?: number;
}): Promise<PruneReport> {
  const resources = await deps.grants.resources();
  const orphans: ResourceRef[] = [];
  const unknown: ResourceRef[] = [];
  let next = 0;
  const worker = async () => {
    while (next < resources.length) {
      const ref = resources[next++]!;
      // A stored id is asked about, and pruned, in the workspace it was granted in.
      const { workspace, id } = keyedInWorkspace(ref.kind) ? splitQualified(ref.id) : { workspace: undefined, id: ref.id };
      const local = { ...ref, id } as ResourceRef;
      const inItsWorkspace = <T>(fn: () => Promise<T>) => (workspace === undefined ? fn() : inWorkspace(workspace, fn));
      let found: boolean | undefined;
      try {
        found = await inItsWorkspace(() => deps.exists(local));
      } catch {
        found = undefined;
      }
      if (found === undefined) unknown.push(ref);
      else if (!found) {
        orphans.push(ref);
        if (!deps.dryRun) await inItsWorkspace(() => deps.writer.pruneOrphan(deps.actor, local));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, deps.concurrency ?? 8) }, worker));
  return { checked: resources.length, orphans, unknown };
}
