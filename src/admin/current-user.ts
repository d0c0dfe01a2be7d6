import type { CurrentUserAnswer } from './api-types.js';
import type { AdminRoute } from './types.js';
import { callingUserRoute } from './users.js';

/**
 * MLflow's own `users/current` (its basic-auth app's shape), which MLflow's UI calls on every page to
 * show who is signed in. `is_basic_auth` is false: sign-out and passwords are flowgate's, so MLflow
 * must not offer its Basic-only logout trick or its change-password dialog.
 */
export const CURRENT_USER_ROUTES: readonly AdminRoute[] = [
  callingUserRoute('/mlflow/users/current', 'Read the signed-in user, as MLflow basic-auth answers it', (user): CurrentUserAnswer => ({
    user: { id: user.id, username: user.username, is_admin: user.isAdmin },
    is_basic_auth: false,
  })),
];
