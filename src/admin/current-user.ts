import { requireUser } from './lookups.js';
import type { AdminRoute } from './types.js';

/**
 * MLflow's own `users/current` (its basic-auth app's shape), which MLflow's UI calls on every page to
 * show who is signed in. `is_basic_auth` is false: sign-out and passwords are flowgate's, so MLflow
 * must not offer its Basic-only logout trick or its change-password dialog.
 */
export const CURRENT_USER_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/users/current',
    summary: 'The signed-in user, as MLflow basic-auth answers it',
    access: 'authenticated',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.principal.username);
      return {
        status: 200,
        body: { user: { id: user.id, username: user.username, is_admin: user.isAdmin }, is_basic_auth: false },
      };
    },
  },
];
