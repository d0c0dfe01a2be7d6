import { badRequest, notFound } from '../errors.js';
import { requireUser } from './lookups.js';
import { SESSION_ROUTES } from './sessions.js';
import type { AdminDeps, AdminRoute } from './types.js';

/**
 * mlflow-oidc-auth 11's session routes: a user's live browser sessions, listed by an opaque `pk` (the
 * row's id; never the session's id or its hash, which are credentials) and revoked one at a time or
 * all at once. Yourself, or as an administrator anyone.
 */

const iso = (ms: number) => new Date(ms).toISOString();

function sessionsOf(deps: AdminDeps): NonNullable<AdminDeps['userSessions']> {
  if (!deps.userSessions) throw notFound('This flowgate keeps no browser sessions');
  return deps.userSessions;
}

const endAll = SESSION_ROUTES.find((r) => r.method === 'DELETE' && r.path === '/mlflow/permissions/users/:username/sessions');
if (!endAll) throw new Error('the session routes moved: user-sessions.ts reuses them');

export const USER_SESSION_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/users/:username/sessions',
    summary: "List a user's live browser sessions (newest first; `pk` addresses one)",
    access: 'self',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      const sessions = await sessionsOf(deps).list(user.id);
      return {
        status: 200,
        body: { sessions: sessions.map((s) => ({ pk: s.id, created_at: iso(s.createdAt), last_seen_at: iso(s.lastSeenAt), expires_at: iso(s.expiresAt) })) },
      };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/users/:username/sessions/:session_pk',
    summary: "End one of a user's browser sessions, by its `pk`",
    access: 'self',
    handler: async (req, deps) => {
      const pk = req.params.session_pk!;
      if (!/^[0-9]{1,15}$/.test(pk)) throw badRequest(`session_pk must be an integer, got '${pk}'`);
      const user = await requireUser(deps, req.params.username!);
      // Another user's session reads exactly like one that does not exist.
      if (!(await sessionsOf(deps).end(user.id, Number(pk)))) throw notFound('Session not found');
      await deps.audit.record({ actor: req.principal.username, action: 'session.end', target: `user:${user.username}`, oldValue: { session_pk: Number(pk) } });
      return { status: 200, body: { revoked: 1 } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/users/:username/sessions',
    summary: "End all of a user's browser sessions (they must sign in again)",
    access: 'self',
    handler: async (req, deps) => {
      const result = await endAll.handler(req, deps);
      return { status: 200, body: { revoked: (result.body as { ended: number }).ended } };
    },
  },
];
