import { keyedInWorkspace, type ResourceKind } from '../../src/resources/kinds.js';
import { activeWorkspace, DEFAULT_WORKSPACE, workspaceInHash } from './workspace';

/**
 * The workspace the Manage screens act in, fixed once as they load: the one their hash route names
 * (`#/models/prod?workspace=team-a`: a link or a reload keeps it), else the one MLflow's UI had chosen
 * at that moment. Every call sends it; it never follows MLflow's later choices (another tab, a link
 * carrying `?workspace=`), which the screens only announce (app.tsx). Null: none named, MLflow's
 * default workspace (no header sent, as before workspaces).
 */
export const PINNED: string | null = workspaceInHash(location.hash) ?? activeWorkspace();

/** The pinned workspace by name (`default` when none is named). */
export const WORKSPACE: string = PINNED ?? DEFAULT_WORKSPACE;

let shown = false;

/** Whether MLflow runs with workspaces (its `server-info`), so the screens name the one they act in. */
export const workspacesShown = (): boolean => shown;

/** Told once, before any screen renders (app.tsx). */
export function showWorkspaces(on: boolean): void {
  shown = on;
}

/** ` in workspace “team-a”` for a change kept in the pinned workspace (every kind but a workspace's own membership), when MLflow runs with workspaces. */
export const inWorkspaceText = (kind: ResourceKind): string => (shown && keyedInWorkspace(kind) ? ` in workspace “${WORKSPACE}”` : '');
