import { useEffect, useState } from 'preact/hooks';
import { FIRST_ROUTE } from './kind-list';
import { WORKSPACE, workspacesShown } from './pin';
import { hashRoute, withWorkspace, workspaceInHash } from './workspace';

/**
 * Hash routes (`#/experiments/12`): the server answers one page, the screens live after the `#`. With
 * MLflow's workspaces, the route's query names the workspace the screens act in
 * (`#/experiments/12?workspace=team-a`), as MLflow's own routes do.
 */
export function useRoute(): string[] {
  const read = () => (hashRoute(location.hash).replace(/^\/?/, '') || FIRST_ROUTE).split('/').map(decodeURIComponent);
  const [parts, setParts] = useState(read);
  useEffect(() => {
    const on = () => {
      // A route naming another workspace (a link pasted, Back past one) is opened anew, acting there:
      // the workspace is fixed as the screens load, and what they show is always where they act.
      const named = workspaceInHash(location.hash);
      if (named !== null && named !== WORKSPACE) {
        location.reload();
        return;
      }
      keepWorkspaceInRoute();
      setParts(read());
    };
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return parts;
}

/** Names the pinned workspace in the address (with workspaces), so a reload or a copied link acts in it too. */
export function keepWorkspaceInRoute(): void {
  if (!workspacesShown() || workspaceInHash(location.hash) === WORKSPACE) return;
  const route = hashRoute(location.hash).replace(/^\/?/, '') || FIRST_ROUTE;
  history.replaceState(history.state, '', withWorkspace(`#/${route}`, WORKSPACE));
}

/** The route of a screen (`href('models', 'prod')`), in the pinned workspace. */
export const href = (...parts: string[]) => {
  const route = `#/${parts.map(encodeURIComponent).join('/')}`;
  return workspacesShown() ? withWorkspace(route, WORKSPACE) : route;
};
