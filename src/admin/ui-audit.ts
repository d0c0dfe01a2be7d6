import { z } from 'zod';
import type { AdminRoute } from './types.js';
import { perDb, readQuery } from './ui-query.js';

/** The audit log for the admin screen, filtered by actor, action (prefix) and target (substring), newest first. */
interface Row {
  id: number;
  at: number;
  actor: string;
  action: string;
  target: string;
  old_value: string | null;
  new_value: string | null;
}

const auditQuery = z.object({
  actor: z.string().max(128).default(''),
  action: z.string().max(64).default(''),
  target: z.string().max(512).default(''),
  max_results: z.coerce.number().int().min(1).max(500).default(50),
  page_token: z.coerce.number().int().min(1).optional(),
});

const statements = perDb((db) =>
  db.prepare<[number, string, string, string, string, string, string, number], Row>(
    `SELECT * FROM audit_log WHERE id < ?
       AND (? = '' OR actor = ?)
       AND (? = '' OR substr(action, 1, length(?)) = ?)
       AND instr(target, ?) > 0
     ORDER BY id DESC LIMIT ?`,
  ),
);

const parse = (v: string | null) => (v === null ? null : (JSON.parse(v) as unknown));

export const UI_AUDIT_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/audit',
    summary: 'Read the audit log filtered by actor, action prefix and target, newest first',
    access: 'admin',
    handler: (req, deps) => {
      const q = readQuery(auditQuery, req.query);
      const rows = statements(deps.db).all(
        q.page_token ?? Number.MAX_SAFE_INTEGER,
        q.actor,
        q.actor,
        q.action,
        q.action,
        q.action,
        q.target,
        q.max_results,
      );
      const entries = rows.map((r) => ({
        id: r.id,
        at: new Date(r.at).toISOString(),
        actor: r.actor,
        action: r.action,
        target: r.target,
        old_value: parse(r.old_value),
        new_value: parse(r.new_value),
      }));
      const last = entries.at(-1);
      return { status: 200, body: { entries, ...(entries.length === q.max_results && last ? { next_page_token: String(last.id) } : {}) } };
    },
  },
];
