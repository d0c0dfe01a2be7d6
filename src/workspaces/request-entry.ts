import type { IncomingMessage } from 'node:http';
import { LRUCache } from 'lru-cache';
import { badRequest, FlowgateError } from '../errors.js';
import type { UpstreamJson } from '../upstream/json-client.js';
import { DEFAULT_WORKSPACE, WORKSPACE_HEADER, workspaceNameProblem } from './names.js';
import { currentWorkspace, inWorkspace } from './request-workspace.js';
import type { WorkspaceMode } from './workspace-mode.js';

/** How long MLflow's word that a workspace exists is kept (deleting one is rare, and MLflow refuses its requests itself). */
const KNOWN_FOR_MS = 30_000;
/** How old MLflow's word on whether it runs with workspaces may be for a request naming one. */
const MODE_SAID_WITHIN_MS = 1000;

/** The workspace a request names: its `X-MLFLOW-WORKSPACE` header as MLflow reads it (the first, when repeated), else `default`. */
export function requestedWorkspace(req: IncomingMessage): string {
  const value = req.headers[WORKSPACE_HEADER];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined || first === '' ? DEFAULT_WORKSPACE : first;
}

/**
 * Each request acts in the workspace it names, when MLflow runs with workspaces: everything flowgate
 * keys, looks up or caches while serving it is that workspace's. A name MLflow's rule refuses, or a
 * workspace MLflow does not have, gets MLflow's own error before anything is decided or changed, so no
 * request is ever decided in another workspace than the one MLflow would act in.
 */
export function createWorkspaceEntry(mode: WorkspaceMode, upstream: UpstreamJson) {
  const known = new LRUCache<string, true>({ max: 1000, ttl: KNOWN_FOR_MS });

  async function exists(name: string): Promise<boolean> {
    if (name === DEFAULT_WORKSPACE || known.has(name)) return true;
    const answer = await inWorkspace(DEFAULT_WORKSPACE, () => upstream.call('GET', `/api/3.0/mlflow/workspaces/${encodeURIComponent(name)}`, {}));
    if (answer.status >= 200 && answer.status < 300) {
      known.set(name, true);
      return true;
    }
    if (answer.status === 404) return false;
    throw new FlowgateError('TEMPORARILY_UNAVAILABLE', `Could not look up workspace '${name}': tracking server answered ${answer.status}`);
  }

  function enter(name: string, handle: () => Promise<void>): Promise<void> {
    if (!mode.enabled) return handle();
    return workspaceNameProblem(name) === undefined ? inWorkspace(name, handle) : handle();
  }

  return {
    /**
     * Runs the request's handling inside its workspace (nothing entered without workspaces, or for a
     * name MLflow refuses: `check` answers it). Until MLflow has said whether it runs with workspaces,
     * it is asked first; `check` refuses the request if it still has not.
     */
    run(req: IncomingMessage, handle: () => Promise<void>): Promise<void> {
      if (!mode.known) return mode.refresh().then(() => (mode.known ? this.run(req, handle) : handle()));
      const name = requestedWorkspace(req);
      // Decided on a mode MLflow stated within the last second: a request naming a workspace means one
      // thing to an MLflow restarted with workspaces and another to one restarted without, and the next
      // readiness probe may be seconds away (or never come). The default workspace is the same in both.
      if (name !== DEFAULT_WORKSPACE && !mode.saidWithin(MODE_SAID_WITHIN_MS)) return mode.refresh().then(() => enter(name, handle));
      return enter(name, handle);
    },
    /** Asks MLflow again whether it runs with workspaces when it has not said so within the last second. */
    async freshMode(): Promise<void> {
      if (!mode.known || !mode.saidWithin(MODE_SAID_WITHIN_MS)) await mode.refresh();
    },
    /** Refuses, as MLflow does, a workspace name that is malformed or that MLflow does not have (MLflow running with workspaces). */
    async checkName(name: string): Promise<void> {
      const problem = workspaceNameProblem(name);
      if (problem !== undefined) throw badRequest(problem);
      if (!(await exists(name))) throw new FlowgateError('RESOURCE_DOES_NOT_EXIST', `Workspace '${name}' not found`);
    },
    /** Refuses, as MLflow does, a request naming a workspace that is malformed or that MLflow does not have. */
    async check(req: IncomingMessage): Promise<void> {
      if (!mode.known) {
        // Unsaid, a request in the default workspace is decided as it is either way (and MLflow, which
        // did not answer flowgate, answers it); one naming another workspace is not decided at all.
        if (requestedWorkspace(req) === DEFAULT_WORKSPACE) return;
        throw new FlowgateError('TEMPORARILY_UNAVAILABLE', 'The tracking server has not said whether it runs with workspaces yet');
      }
      if (!mode.enabled) return;
      const name = requestedWorkspace(req);
      await this.checkName(name);
      // MLflow said it runs with workspaces only after this request was entered (in none): never decided outside its own.
      if ((currentWorkspace() ?? DEFAULT_WORKSPACE) !== name)
        throw new FlowgateError('TEMPORARILY_UNAVAILABLE', 'The tracking server has just started to run with workspaces; send the request again');
    },
  };
}

export type WorkspaceEntry = ReturnType<typeof createWorkspaceEntry>;
