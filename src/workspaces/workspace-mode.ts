import type { Logger } from '../logging.js';
import type { UpstreamJson } from '../upstream/json-client.js';

/** MLflow's answer naming its features; `workspaces_enabled` since 3.11 (older releases have no workspaces). */
const SERVER_INFO = '/api/3.0/mlflow/server-info';

/**
 * Whether the MLflow behind flowgate runs with workspaces: read at start and again whenever readiness
 * is probed, so a restart of MLflow with or without `--enable-workspaces` is followed. An answer that
 * does not say keeps what was known.
 */
export function createWorkspaceMode(upstream: UpstreamJson, logger: Logger) {
  let enabled = false;
  let known = false;
  return {
    get enabled(): boolean {
      return enabled;
    },
    /** Whether MLflow has said yet: until it has, a request is not decided (it could be in any workspace). */
    get known(): boolean {
      return known;
    },
    async refresh(): Promise<void> {
      let on: boolean | undefined;
      try {
        const answer = await upstream.call('GET', SERVER_INFO, {});
        if (answer.status === 404) on = false;
        else if (answer.status === 200) on = (answer.json as { workspaces_enabled?: unknown } | undefined)?.workspaces_enabled === true;
      } catch {
        return;
      }
      if (on === undefined) return;
      const changed = !known || on !== enabled;
      known = true;
      if (!changed) return;
      enabled = on;
      if (on) logger.info({ workspaces: on }, 'MLflow runs with workspaces: grants are kept per workspace');
    },
  };
}

export type WorkspaceMode = ReturnType<typeof createWorkspaceMode>;

/** A readiness check that also asks MLflow again whether it runs with workspaces, once it answers. */
export function followingWorkspaces<R extends { readonly ready: boolean }>(readiness: () => Promise<R>, mode: Pick<WorkspaceMode, 'refresh'>): () => Promise<R> {
  return async () => {
    const result = await readiness();
    if (result.ready) await mode.refresh();
    return result;
  };
}
