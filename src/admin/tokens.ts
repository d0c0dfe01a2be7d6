import { z } from 'zod';
import { forbidden } from '../errors.js';
import type { Principal } from '../principals/types.js';
import { requireUser } from './lookups.js';
import type { AccessTokenLimits, IssuedToken } from './api-types.js';
import type { AdminRoute } from './types.js';
import { usernameSchema } from './validation.js';

const accessTokenBody = z.strictObject({
  username: usernameSchema.optional(),
  expiration: z.string({ message: 'must be an ISO 8601 timestamp string' }).optional(),
});

/**
 * Who may mint (create, replace or rotate) an access token or access key for `holder`. Every handler
 * that mints calls this (the batch route runs handlers directly, past the access rule).
 *
 * - A caller proven by a bearer JWT (an identity provider's access token, a pod's projected Kubernetes
 *   token) mints no access token or access key for their own account, nor replaces one: the JWT lives
 *   an hour or so and ends with its account at the provider or cluster, while a minted token would live
 *   up to FLOWGATE_TOKEN_MAX_DAYS, renewable with itself, whatever became of the account. So a leaked
 *   or short-lived JWT stays what it was. An administrator acting through a JWT still mints for other
 *   users (an administrator's act, audited).
 * - A service account's tokens are issued by an administrator only. Whoever holds its token (a pipeline,
 *   or whoever took it from one) would otherwise renew it to FLOWGATE_TOKEN_MAX_DAYS with itself, and
 *   since a service account holds one token, revoke the one the administrator issued: the expiry an
 *   administrator chose would mean nothing, and a leaked token could lock out the pipeline it came from.
 *
 * Listing and revoking one's own tokens stay open to both.
 */
export function refuseMinting(principal: Principal, holder: { readonly id: number; readonly isServiceAccount: boolean }): void {
  if (principal.via === 'bearer' && principal.userId === holder.id)
    throw forbidden(
      'Access tokens cannot be created or replaced with a bearer token (a JWT of an identity provider or a Kubernetes cluster): ' +
        'a token minted with it would outlive it and its account. Create one after signing in (the UI, or an access token you hold), ' +
        'or ask an administrator',
    );
  if (holder.isServiceAccount && !principal.isAdmin)
    throw forbidden("A service account's access tokens are issued by an administrator: ask one for a new token");
}

export const TOKEN_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/access-token-limits',
    summary: 'Read the expiry a new access token gets by default and the furthest one may be asked (FLOWGATE_TOKEN_MAX_DAYS), in days',
    access: 'authenticated',
    handler: async (_req, deps) => ({
      status: 200,
      body: { default_expiration_days: deps.tokens.limits.defaultDays, max_expiration_days: deps.tokens.limits.maxDays } satisfies AccessTokenLimits,
    }),
  },
  {
    method: 'PATCH',
    path: '/mlflow/permissions/users/access-token',
    summary:
      'Generate an access token (shown once) for yourself (a person), or as an admin for any user; the previous token stops working',
    access: 'authenticated',
    body: accessTokenBody,
    handler: async (req, deps) => {
      const body = req.body as z.infer<typeof accessTokenBody>;
      const username = body.username ?? req.principal.username;
      if (username !== req.principal.username && !req.principal.isAdmin)
        throw forbidden('Only administrators can create tokens for other users');
      const user = await requireUser(deps, username);
      refuseMinting(req.principal, user);
      const issued = await deps.tokens.issue(req.principal.username, user, body.expiration);
      const expires = new Date(issued.expiresAt).toISOString();
      return {
        status: 200,
        body: {
          token: issued.token,
          username: user.username,
          expiration: expires,
          expires_at: expires,
          message: deps.tokens.holdsBootstrapToken(user.id)
            ? `Token for ${user.username} created; it is shown only once. The bootstrap token from configuration stays valid beside it`
            : `Token for ${user.username} created; it is shown only once`,
        } satisfies IssuedToken,
      };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/permissions/users/:username/access-token',
    summary: "Revoke all of a user's access tokens",
    access: 'self',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      const revoked = await deps.tokens.revokeAll(req.principal.username, user);
      return { status: 200, body: { revoked } };
    },
  },
];
