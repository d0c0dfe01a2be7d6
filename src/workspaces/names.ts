/**
 * MLflow's workspaces (3.10+, `mlflow server --enable-workspaces`): a request names its workspace with
 * `X-MLFLOW-WORKSPACE`, `default` without one. Names are unique only inside a workspace, so a grant's
 * key carries the workspace it was made in.
 */
export const WORKSPACE_HEADER = 'x-mlflow-workspace';
export const DEFAULT_WORKSPACE = 'default';

/** MLflow's own rule for a workspace name (mlflow/store/workspace/utils.py). */
export const WORKSPACE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
export const MAX_WORKSPACE_NAME = 63;

/** MLflow's message for a name its rule refuses, so a client sees the same words through flowgate. */
export const workspaceNameProblem = (name: string): string | undefined =>
  name.length <= MAX_WORKSPACE_NAME && WORKSPACE_NAME.test(name)
    ? undefined
    : `Workspace name '${name}' must match the pattern ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ (lowercase alphanumeric with optional internal hyphens).`;

/**
 * Joins a workspace to an id in the form the policy store and index key grants by. The default
 * workspace's ids are stored as they are, so a store from before workspaces is already the default
 * workspace's, and a deployment without workspaces never sees the separator. Any other id, and a
 * default-workspace id that itself holds the separator, is `<workspace><separator><id>`: a workspace
 * name never holds the separator, so the form is one-to-one whatever text a client or MLflow sends.
 */
export const SEPARATOR = '\u001f';

export const holdsSeparator = (text: string): boolean => text.includes(SEPARATOR);

/** The stored form of `id` in `workspace` (the default one when undefined). */
export function qualify(workspace: string | undefined, id: string): string {
  const ws = workspace ?? DEFAULT_WORKSPACE;
  return ws === DEFAULT_WORKSPACE && !holdsSeparator(id) ? id : `${ws}${SEPARATOR}${id}`;
}

/** The workspace and MLflow's id of a stored id (the inverse of `qualify`). */
export function splitQualified(stored: string): { readonly workspace: string; readonly id: string } {
  const at = stored.indexOf(SEPARATOR);
  return at < 0 ? { workspace: DEFAULT_WORKSPACE, id: stored } : { workspace: stored.slice(0, at), id: stored.slice(at + 1) };
}
