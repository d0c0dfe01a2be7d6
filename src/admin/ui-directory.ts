import { z } from 'zod';
import { userJson } from '../principals/types.js';
import type { AdminRoute } from './types.js';
import { paged, pageQuery, perDb, readQuery } from './ui-query.js';

/** Searchable, paged lists of users, service accounts and groups for the admin screens (10k users stay one query a page). */
interface UserRow {
  id: number;
  username: string;
  display_name: string;
  is_admin: number;
  is_service_account: number;
  created_at: number;
}

const statements = perDb((db) => ({
  users: db.prepare<[number, number, string, string, number, number], UserRow>(
    `SELECT * FROM users WHERE is_service_account IN (?, ?)
       AND (instr(lower(username), lower(?)) > 0 OR instr(lower(display_name), lower(?)) > 0)
     ORDER BY username LIMIT ? OFFSET ?`,
  ),
  groups: db.prepare<[string, number, number], { name: string; created_at: number; members: number }>(
    `SELECT g.name, g.created_at, (SELECT count(*) FROM group_members m WHERE m.group_id = g.id) AS members
       FROM groups g WHERE instr(lower(g.name), lower(?)) > 0 ORDER BY g.name LIMIT ? OFFSET ?`,
  ),
}));

const usersQuery = pageQuery.extend({ type: z.enum(['user', 'service_account', 'all']).default('all') });

export const UI_DIRECTORY_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/users',
    summary: 'Search users and service accounts by name, one page at a time',
    access: 'admin',
    handler: (req, deps) => {
      const q = readQuery(usersQuery, req.query);
      const [a, b] = q.type === 'user' ? [0, 0] : q.type === 'service_account' ? [1, 1] : [0, 1];
      const rows = statements(deps.db).users.all(a, b, q.q, q.q, q.max_results + 1, q.page_token);
      const page = paged(rows, q);
      const users = page.rows.map((r) =>
        userJson({
          id: r.id,
          username: r.username,
          displayName: r.display_name,
          isAdmin: r.is_admin === 1,
          isServiceAccount: r.is_service_account === 1,
          createdAt: r.created_at,
        }),
      );
      return { status: 200, body: { users, ...(page.next_page_token ? { next_page_token: page.next_page_token } : {}) } };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/groups',
    summary: 'Search groups by name, one page at a time, with their member counts',
    access: 'admin',
    handler: (req, deps) => {
      const q = readQuery(pageQuery, req.query);
      const page = paged(statements(deps.db).groups.all(q.q, q.max_results + 1, q.page_token), q);
      const groups = page.rows.map((g) => ({ name: g.name, members: g.members, created_at: new Date(g.created_at).toISOString() }));
      return { status: 200, body: { groups, ...(page.next_page_token ? { next_page_token: page.next_page_token } : {}) } };
    },
  },
];
