import { z } from 'zod';
import type { AdminRoute } from './types.js';
import { parseWith } from './validation.js';

const auditQuery = z.strictObject({
  max_results: z.coerce.number().int().min(1).max(1000).default(100),
  page_token: z.coerce.number().int().min(1).optional(),
});

export const AUDIT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/audit',
    summary: 'Read the audit log of changes to principals, tokens and grants, newest first',
    access: 'admin',
    handler: async (req, deps) => {
      const q = parseWith(auditQuery, Object.fromEntries(req.query), 'query string');
      const entries = await deps.audit.list(q.max_results, q.page_token);
      const last = entries.at(-1);
      return {
        status: 200,
        body: { entries, ...(entries.length === q.max_results && last ? { next_page_token: String(last.id) } : {}) },
      };
    },
  },
];
