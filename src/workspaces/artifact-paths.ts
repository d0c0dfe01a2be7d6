import { DEFAULT_WORKSPACE } from './names.js';
import { currentWorkspace } from './request-workspace.js';
import type { WorkspaceMode } from './workspace-mode.js';

/**
 * MLflow run with workspaces roots every experiment's served artifacts at
 * `mlflow-artifacts:/workspaces/<workspace>/<experiment id>`, the default workspace's included
 * (`sqlalchemy_workspace_store.py`, `_get_artifact_location`), so its clients send artifact paths
 * `workspaces/<ws>/<experiment id>/<run>/artifacts/...`. Its artifact routes take such a path only in
 * the request's own workspace (`_get_workspace_scoped_repo_path_if_enabled`), and root any other path
 * in it (`<exp>/...` is `workspaces/<ws>/<exp>/...`; the default workspace's stays at the root).
 */
export const WORKSPACES_DIR = 'workspaces';

/** The workspace whose prefix an artifact path may carry: the request's when MLflow runs with workspaces, else none. */
export function artifactPrefixWorkspace(mode: Pick<WorkspaceMode, 'enabled'> | undefined): string | undefined {
  return mode?.enabled ? (currentWorkspace() ?? DEFAULT_WORKSPACE) : undefined;
}

/**
 * Which of an artifact path's segments names its experiment: the first, or the third after the
 * prefix `workspaces/<workspace>/` when `workspace` (the request's, MLflow running with workspaces)
 * is given. A prefix naming no workspace, or another one than the request's, is the problem MLflow
 * itself answers (its words), so the experiment decided on is the one MLflow acts on. Without
 * workspaces `workspaces/...` is no prefix: its first segment names no experiment and is refused so.
 */
export function experimentSegmentOf(segments: readonly string[], workspace: string | undefined): { readonly at: number } | { readonly problem: string } {
  if (workspace === undefined || segments[0] !== WORKSPACES_DIR) return { at: 0 };
  const named = segments[1];
  if (!named) return { problem: "Artifact paths prefixed with 'workspaces/' must include a workspace name." };
  if (named !== workspace) return { problem: `Artifact path targets workspace '${named}' but the workspace specified in the request is '${workspace}'.` };
  return { at: 2 };
}
