import { z } from 'zod';
import type { AdminRoute } from './types.js';

export const MAX_BATCH_CALLS = 10_000;

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
    .max(MAX_BATCH_CALLS),
});

export type BatchCall = z.infer<typeof batchBody>['calls'][number];

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
