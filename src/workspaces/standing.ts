import { effectivePermission } from '../authz/decide.js';
import type { Grantee, PolicyReader } from '../authz/policy.js';
import type { ResourceRef } from '../authz/types.js';
import { WORKSPACE } from '../resources/kinds.js';
import { DEFAULT_WORKSPACE } from './names.js';
import { currentWorkspace } from './request-workspace.js';
import type { WorkspaceMode } from './workspace-mode.js';

export interface Standing {
  readonly member: boolean;
  readonly manage: boolean;
}

/**
 * A caller's standing in a workspace, from their own and their groups' grants on it: MANAGE is its
 * administrator, USE a member; the default workspace counts everyone a member unless configured not
 * to (FLOWGATE_DEFAULT_WORKSPACE_OPEN), as MLflow's basic-auth does with `grant_default_workspace_access`.
 */
export function createWorkspaceStanding(deps: { readonly policy: PolicyReader; readonly mode: Pick<WorkspaceMode, 'enabled'>; readonly defaultWorkspaceOpen: boolean }) {
  function in_(who: Grantee, workspace: string): Standing {
    const ref: ResourceRef = { kind: WORKSPACE, id: workspace };
    const { permission } = effectivePermission(deps.policy.factsFor(who, ref), 'NO_PERMISSIONS');
    const manage = permission === 'MANAGE';
    const member = manage || permission === 'USE' || (workspace === DEFAULT_WORKSPACE && deps.defaultWorkspaceOpen);
    return { member, manage };
  }
  return {
    /** In the request's workspace; undefined when MLflow runs without workspaces (nothing changes then). */
    current(who: Grantee): Standing | undefined {
      return deps.mode.enabled ? in_(who, currentWorkspace() ?? DEFAULT_WORKSPACE) : undefined;
    },
    /** In a named workspace (listing workspaces). */
    in: in_,
  };
}

export type WorkspaceStanding = ReturnType<typeof createWorkspaceStanding>;
