import { requireUser } from './lookups.js';
import type { AdminRoute } from './types.js';

export const SESSION_ROUTES: readonly AdminRoute[] = [
  {
    method: 'DELETE',
    path: '/mlflow/permissions/users/:username/sessions',
    summary: "End all of a user's browser sessions (they must sign in again)",
    access: 'self',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      const ended = (await deps.endSessionsOf?.(user.id)) ?? 0;
      await deps.audit.record({
        actor: req.principal.username,
        action: 'session.end_all',
        target: `user:${user.username}`,
        oldValue: { sessions: ended },
      });
      return { status: 200, body: { ended } };
    },
  },
];
