import { z } from 'zod';
import type { AuditRow } from './api-types.js';
import type { AdminRoute } from './types.js';
import { newestFirst, newestFirstFields } from './ui-query.js';

/** The audit log for the admin screen, filtered by actor, action (prefix) and target (substring), newest first. */
const auditQuery = z.object({
  actor: z.string().max(128).default(''),
  action: z.string().max(64).default(''),
  target: z.string().max(512).default(''),
  ...newestFirstFields(500, 50),
});

export const UI_AUDIT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/audit',
    summary: 'Read the audit log filtered by actor, action prefix and target, newest first',
    access: 'admin',
    query: auditQuery,
    handler: (req, deps) => newestFirst(req.query, auditQuery, (q): Promise<AuditRow[]> => deps.audit.search(q, q.max_results, q.page_token)),
  },
];
