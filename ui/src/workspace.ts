/**
 * MLflow's workspaces as the Manage screens and the menu on MLflow's page see them: MLflow's UI keeps
 * its choice in `localStorage['mlflow.activeWorkspace']` (written whenever one of its page URLs carries
 * `?workspace=`) and names it in its hash routes (`#/models?workspace=team-a`); the Manage screens
 * carry theirs the same way (`#/models/prod?workspace=team-a`). No side effects: the menu script uses
 * it on MLflow's page too.
 */
import { DEFAULT_WORKSPACE } from '../../src/workspaces/names.js';

export { DEFAULT_WORKSPACE };

/** Where MLflow's UI keeps the workspace chosen last (in any of its tabs). */
export const ACTIVE_WORKSPACE_KEY = 'mlflow.activeWorkspace';

/** The query parameter MLflow's hash routes, and the Manage screens', name the workspace with. */
export const WORKSPACE_PARAM = 'workspace';

/** The workspace MLflow's UI chose last, or null when it has chosen none (or storage is unavailable). */
export function activeWorkspace(): string | null {
  try {
    return window.localStorage.getItem(ACTIVE_WORKSPACE_KEY) || null;
  } catch {
    return null;
  }
}

/** A hash route split at its `?`: the route (`/models/prod`) and its query. */
function splitHash(hash: string): { route: string; query: URLSearchParams } {
  const text = hash.replace(/^#/, '');
  const at = text.indexOf('?');
  return at < 0 ? { route: text, query: new URLSearchParams() } : { route: text.slice(0, at), query: new URLSearchParams(text.slice(at + 1)) };
}

/** The route of a hash, without its query (`#/models/prod?workspace=a` → `/models/prod`). */
export const hashRoute = (hash: string): string => splitHash(hash).route;

/** The workspace a hash route names (`?workspace=`), or null. */
export function workspaceInHash(hash: string): string | null {
  return splitHash(hash).query.get(WORKSPACE_PARAM) || null;
}

/** `route` (`#/models/prod`) naming `workspace` in its query. */
export function withWorkspace(route: string, workspace: string): string {
  const { route: path, query } = splitHash(route);
  query.set(WORKSPACE_PARAM, workspace);
  return `#${path}?${query.toString()}`;
}

/**
 * The workspace MLflow's page (where the menu is) is in: the one its own URL names (MLflow keeps it
 * in its hash route's query), else the one MLflow's UI chose last; null for none (MLflow's default).
 */
export function mlflowPageWorkspace(): string | null {
  const inSearch = new URLSearchParams(location.search).get(WORKSPACE_PARAM) || null;
  return workspaceInHash(location.hash) ?? inSearch ?? activeWorkspace();
}
