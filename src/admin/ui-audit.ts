import { z } from 'zod';
import type { AdminRoute } from './types.js';
import { readQuery } from './ui-query.js';

/** The audit log for the admin screen, filtered by actor, action (prefix) and target (substring), newest first. */
const auditQuery = z.object({
  actor: z.string().max(128).default(''),
  action: z.string().max(64).default(''),
  target: z.string().max(512).default(''),
  max_results: z.coerce.number().int().min(1).max(500).default(50),
  page_token: z.coerce.number().int().min(1).optional(),
});

export const UI_AUDIT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/audit',
    summary: 'Read the audit log filtered by actor, action prefix and target, newest first',
    access: 'admin',
    handler: async (req, deps) => {
      const q = readQuery(auditQuery, req.query);
      const entries = await deps.audit.search(q, q.max_results, q.page_token);
      const last = entries.at(-1);
      return { status: 200, body: { entries, ...(entries.length === q.max_results && last ? { next_page_token: String(last.id) } : {}) } };
    },
  },
];
