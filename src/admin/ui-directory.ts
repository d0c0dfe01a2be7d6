import { z } from 'zod';
import { adminUserJson, defaultSignIn } from './users.js';
import type { AdminRoute } from './types.js';
import { paged, pageQuery, readQuery } from './ui-query.js';

/** Searchable, paged lists of users, service accounts and groups for the admin screens (10k users stay one query a page). */
const usersQuery = pageQuery.extend({ type: z.enum(['user', 'service_account', 'all']).default('all') });

export const UI_DIRECTORY_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/users',
    summary: 'Search users and service accounts by name, one page at a time',
    access: 'admin',
    handler: async (req, deps) => {
      const q = readQuery(usersQuery, req.query);
      const page = paged(await deps.directory.searchUsers(q.type, q.q, q.max_results + 1, q.page_token), q);
      const users = page.rows.map((u) => adminUserJson(deps, u));
      // What a person created without `sign_in` gets: the create screen offers the choice where it is `oidc`.
      return { status: 200, body: { users, sign_in_default: defaultSignIn(deps, false), ...(page.next_page_token ? { next_page_token: page.next_page_token } : {}) } };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/groups',
    summary: 'Search groups by name, one page at a time, with their member counts',
    access: 'admin',
    handler: async (req, deps) => {
      const q = readQuery(pageQuery, req.query);
      const page = paged(await deps.directory.searchGroups(q.q, q.max_results + 1, q.page_token), q);
      const groups = page.rows.map((g) => ({ name: g.name, members: g.members, created_at: new Date(g.createdAt).toISOString() }));
      return { status: 200, body: { groups, ...(page.next_page_token ? { next_page_token: page.next_page_token } : {}) } };
    },
  },
];
