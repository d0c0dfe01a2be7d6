import { z } from 'zod';
import type { AdminRoute } from './types.js';

const pruneBody = z.strictObject({ dry_run: z.boolean({ message: 'must be a boolean' }).default(false) });

const refName = (r: { kind: string; id: string }) => `${r.kind}:${r.id}`;

/**
 * `flowgate grants prune` through the running flowgate: the grants of resources MLflow no longer has
 * (after `mlflow gc`) removed by this process, on its own store and MLflow, audited, its caches told.
 */
export const PRUNE_ROUTES: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/mlflow/permissions/grants/prune',
    summary: 'Remove the grants of resources MLflow no longer has (dry_run: only list them)',
    access: 'admin',
    body: pruneBody,
    handler: async (req, deps) => {
      if (!deps.pruneOrphans) throw new Error('this flowgate was built without MLflow look-ups for pruning');
      const dryRun = (req.body as z.infer<typeof pruneBody>).dry_run;
      const report = await deps.pruneOrphans(`${req.principal.username} (grants prune)`, dryRun);
      return {
        status: 200,
        body: { checked: report.checked, orphans: report.orphans.map(refName), unknown: report.unknown.map(refName), dry_run: dryRun },
      };
    },
  },
];
