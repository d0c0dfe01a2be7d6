import { badRequest } from '../errors.js';
import { userJson } from '../principals/types.js';
import { requireUser } from './lookups.js';
import type { AdminRoute } from './types.js';

/**
 * Disabling keeps the user (grants, memberships, the identity-provider binding) but ends their
 * tokens and sessions on every flowgate on the store and refuses every credential and sign-in of
 * theirs until enabled: how a bearer or OIDC account is shut out without deleting what it owns.
 * An administrator's disable is recorded as theirs, so the identity provider's SCIM (`active: true`
 * on every profile sync) does not undo it; an administrator's enable undoes either's disable.
 */
const setActive =
  (active: boolean): AdminRoute['handler'] =>
  async (req, deps) => {
    const user = await requireUser(deps, req.params.username!);
    if (!active && user.username === req.principal.username) throw badRequest('you cannot disable yourself');
    if (!deps.setUserActive) throw badRequest('disabling users is not available here');
    await deps.setUserActive(req.principal.username, user, active, 'admin');
    return { status: 200, body: { user: userJson((await deps.directory.userById(user.id))!) } };
  };

export const USER_STATE_ROUTES: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/mlflow/permissions/users/:username/disable',
    summary: "Disable a user: their tokens and sessions end everywhere, and no credential or sign-in of theirs works until enabled",
    access: 'admin',
    handler: setActive(false),
  },
  {
    method: 'POST',
    path: '/mlflow/permissions/users/:username/enable',
    summary: 'Enable a disabled user (their ended tokens and sessions stay ended)',
    access: 'admin',
    handler: setActive(true),
  },
];
