import { z } from 'zod';
import { badRequest, FlowgateError } from '../errors.js';
import { DEFAULT_WORKSPACE } from '../workspaces/names.js';
import type { WorkspaceEntry } from '../workspaces/request-entry.js';
import type { WorkspaceMode } from '../workspaces/workspace-mode.js';
import type { AdminRoute } from './types.js';

export const MAX_BATCH_CALLS = 10_000;
/**
 * The largest body the batch route reads (FLOWGATE_MAX_BODY_BYTES when that is larger): room for
 * MAX_BATCH_CALLS calls of 1.6 KiB each on average. An ordinary grant call (what `policy apply` sends)
 * takes about 140 bytes, so 10,000 of them (1.3 MB) no longer hit the 1 MiB default for other routes.
 * Only an administrator's batch is read (the route's access is checked before its body).
 */
export const MAX_BATCH_BODY_BYTES = 16 * 1024 * 1024;

/** Routes a batch does not take: a batch in a batch, and what asks MLflow about every resource inside the batch's transaction. */
export const NOT_BATCHED: ReadonlyMap<string, string> = new Map([
  ['/mlflow/permissions/batch', 'a batch cannot hold another batch'],
  [
    '/mlflow/permissions/grants/prune',
    "grants/prune asks MLflow about every granted resource, which inside a batch's transaction would hold up every other store access meanwhile: call it on its own",
  ],
]);

export const batchBody = z.strictObject({
  calls: z
    .array(
      z.strictObject({
        method: z.enum(['POST', 'PATCH', 'DELETE']),
        /** Relative to `/api/2.0/mlflow/`, e.g. `permissions/groups/team-a/users`. */
        path: z.string().min(1).max(2048),
        body: z.unknown().optional(),
        /** The MLflow workspace the call acts in (its `X-MLFLOW-WORKSPACE`); the batch request's own without. */
        workspace: z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be an MLflow workspace name').max(63).optional(),
      }),
    )
    .min(1)
    .max(MAX_BATCH_CALLS, `a batch holds at most ${MAX_BATCH_CALLS} calls`),
});

export type BatchCall = z.infer<typeof batchBody>['calls'][number];

/**
 * The check a batch call's `workspace` gets, as a request's `X-MLFLOW-WORKSPACE` gets it
 * (src/workspaces/request-entry.ts): a workspace MLflow does not have is MLflow's 404, and until MLflow
 * has said whether it runs with workspaces, a 503. Without workspaces a request's header is ignored
 * (MLflow ignores it too), but a batch call naming a workspace other than `default` is refused (400):
 * its grant would be kept under a workspace nothing lists or uses.
 */
export function batchWorkspaceCheck(mode: Pick<WorkspaceMode, 'known' | 'enabled'>, entry: Pick<WorkspaceEntry, 'freshMode' | 'checkName'>): (name: string) => Promise<void> {
  return async (name) => {
    if (name === DEFAULT_WORKSPACE) return;
    await entry.freshMode();
    if (!mode.known) throw new FlowgateError('TEMPORARILY_UNAVAILABLE', 'The tracking server has not said whether it runs with workspaces yet');
    if (!mode.enabled)
      throw badRequest(`'workspace' is '${name}', but the tracking server runs without workspaces: a call can only act in 'default' (or name none)`);
    await entry.checkName(name);
  };
}

/**
 * Several admin changes in one transaction: all of them, or (on the first refusal) none. Policy as
 * code applies its diff through it, so a file is never half applied.
 */
export const BATCH_ROUTES: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/mlflow/permissions/batch',
    summary: 'Apply several admin changes (users, groups, memberships, grants) in one transaction: all or none',
    access: 'admin',
    body: batchBody,
    handler: async (req, deps) => {
      if (!deps.runBatch) throw new Error('the admin API did not provide runBatch');
      const results = await deps.runBatch(req.principal, (req.body as z.infer<typeof batchBody>).calls);
      return { status: 200, body: { results } };
    },
  },
];
