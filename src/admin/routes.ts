import { ACCESS_KEY_ROUTES } from './access-keys.js';
import { AUDIT_ROUTES } from './audit.js';
import { AUTH_SERVICE_ROUTES } from './auth-service-compat.js';
import { BATCH_ROUTES } from './batch.js';
import { CURRENT_USER_ROUTES } from './current-user.js';
import { EXPLAIN_ROUTES } from './explain.js';
import { GRANT_ROUTES } from './grants.js';
import { GROUP_ROUTES } from './groups.js';
import { NAMED_TOKEN_ROUTES } from './named-tokens.js';
import { PATTERN_GRANT_ROUTES } from './pattern-grants.js';
import { PRUNE_ROUTES } from './prune.js';
import { ROLE_ROUTES } from './roles.js';
import { SESSION_ROUTES } from './sessions.js';
import { TOKEN_ROUTES } from './tokens.js';
import type { AdminRoute } from './types.js';
import { UI_AUDIT_ROUTES } from './ui-audit.js';
import { UI_DIRECTORY_ROUTES } from './ui-directory.js';
import { UI_RESOURCE_ROUTES } from './ui-resources.js';
import { USER_SESSION_ROUTES } from './user-sessions.js';
import { USER_ROUTES } from './users.js';
import { USER_STATE_ROUTES } from './user-state.js';
import { WORKSPACE_MEMBER_ROUTES } from './workspace-members.js';

/** Every admin route; each is served under `/api/2.0` and `/ajax-api/2.0` (`/api/3.0` and `/ajax-api/3.0` where it says so). */
export const ADMIN_ROUTES: readonly AdminRoute[] = [
  ...USER_ROUTES,
  ...CURRENT_USER_ROUTES,
  ...TOKEN_ROUTES,
  ...ACCESS_KEY_ROUTES,
  ...SESSION_ROUTES,
  ...GROUP_ROUTES,
  ...GRANT_ROUTES,
  ...PRUNE_ROUTES,
  ...AUDIT_ROUTES,
  ...EXPLAIN_ROUTES,
  ...BATCH_ROUTES,
  ...UI_RESOURCE_ROUTES,
  ...UI_DIRECTORY_ROUTES,
  ...UI_AUDIT_ROUTES,
  ...PATTERN_GRANT_ROUTES,
  ...AUTH_SERVICE_ROUTES,
  ...ROLE_ROUTES,
  ...NAMED_TOKEN_ROUTES,
  ...USER_SESSION_ROUTES,
  ...USER_STATE_ROUTES,
  ...WORKSPACE_MEMBER_ROUTES,
];

export const ADMIN_API_PREFIXES = ['/api/2.0', '/ajax-api/2.0'] as const;

/** Where MLflow's basic-auth serves its role and per-user permission routes. */
export const ADMIN_API_V3_PREFIXES = ['/api/3.0', '/ajax-api/3.0'] as const;

/** The prefixes a route is served under: `/api` first, then its `/ajax-api` twin. */
export const routePrefixes = (route: Pick<AdminRoute, 'api'>): readonly string[] => (route.api === '3.0' ? ADMIN_API_V3_PREFIXES : ADMIN_API_PREFIXES);

/** Paths flowgate answers itself, never forwarded to MLflow even when no route matches. */
export function isAdminNamespace(path: string): boolean {
  for (const prefix of ADMIN_API_PREFIXES) {
    if (!path.startsWith(prefix)) continue;
    const rest = path.slice(prefix.length);
    if (rest.startsWith('/mlflow/permissions/') || rest === '/mlflow/permissions') return true;
    if (rest === '/mlflow/users' || rest.startsWith('/mlflow/users/')) return true;
  }
  for (const prefix of ADMIN_API_V3_PREFIXES) {
    if (!path.startsWith(prefix)) continue;
    const rest = path.slice(prefix.length);
    if (rest.startsWith('/mlflow/users/') || rest.startsWith('/mlflow/roles/') || rest.startsWith('/mlflow/permissions/workspaces/')) return true;
  }
  return false;
}
