import { z } from 'zod';
import type { AdminRoute } from './types.js';
import { newestFirst, newestFirstFields } from './ui-query.js';

const auditQuery = z.strictObject(newestFirstFields(1000, 100));

export const AUDIT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/audit',
    summary: 'Read the audit log of changes to principals, tokens and grants, newest first',
    access: 'admin',
    query: auditQuery,
    handler: (req, deps) => newestFirst(req.query, auditQuery, (q) => deps.audit.list(q.max_results, q.page_token)),
  },
];
