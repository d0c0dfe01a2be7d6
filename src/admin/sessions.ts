import { requireUser } from './lookups.js';
import type { AdminRoute } from './types.js';

export const SESSION_ROUTES: readonly AdminRoute[] = [
  {
    method: 'DELETE',
    path: '/mlflow/permissions/users/:username/sessions',
    summary: "End all of a user's browser sessions (they must sign in again)",
    access: 'self',
    handler: (req, deps) => {
      const user = requireUser(deps, req.params.username!);
      const ended = deps.endSessionsOf?.(user.id) ?? 0;
      deps.audit.record({
        actor: req.principal.username,
        action: 'session.end_all',
        target: `user:${user.username}`,
        oldValue: { sessions: ended },
      });
      return { status: 200, body: { ended } };
    },
  },
];
