import { z } from 'zod';
import { adminUserJson, defaultSignIn } from './users.js';
import type { GroupSearchAnswer, PageRows, UserSearchAnswer } from './api-types.js';
import type { AdminRoute } from './types.js';
import { listPage, pageQuery } from './ui-query.js';
import type { TokenState } from '../tokens/token-service.js';
import type { TokenStateJson } from './api-types.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** A token state as the screens read it. */
function tokenJson(t: TokenState | undefined): TokenStateJson {
  if (t === undefined || t.state === 'none') return { state: 'none' };
  return t.state === 'revoked' ? { state: 'revoked', revoked_at: iso(t.at) } : { state: t.state, expires_at: iso(t.at) };
}

/** Searchable, paged lists of users, service accounts and groups for the admin screens (10k users stay one query a page). */
const usersQuery = pageQuery.extend({ type: z.enum(['user', 'service_account', 'all']).default('all') });

export const UI_DIRECTORY_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/users',
    summary: 'Search users and service accounts by name, one page at a time',
    access: 'admin',
    query: usersQuery,
    handler: (req, deps) =>
      listPage(req.query, usersQuery, (q, limit, offset) => deps.directory.searchUsers(q.type, q.q, limit, offset), async (rows): Promise<PageRows<UserSearchAnswer>> => {
        const states = await deps.tokens.states(rows.map((u) => u.id));
        return {
          users: rows.map((u) => ({ ...adminUserJson(deps, u), token: tokenJson(states.get(u.id)) })),
          // What a person created without `sign_in` gets: the create screen offers the choice where it is `oidc`.
          sign_in_default: defaultSignIn(deps, false),
        };
      }),
  },
  {
    method: 'GET',
    path: '/mlflow/permissions/ui/groups',
    summary: 'Search groups by name, one page at a time, with their member counts',
    access: 'admin',
    query: pageQuery,
    handler: (req, deps) =>
      listPage(req.query, pageQuery, (q, limit, offset) => deps.directory.searchGroups(q.q, limit, offset), (rows): PageRows<GroupSearchAnswer> => ({
        groups: rows.map((g) => ({ name: g.name, members: g.members, created_at: new Date(g.createdAt).toISOString() })),
      })),
  },
];
