import { z } from 'zod';
import { badRequest } from '../errors.js';
import { requireUser } from './lookups.js';
import { refuseMinting } from './tokens.js';
import type { AdminRoute } from './types.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const NAME_RULE = 'must be 1-64 characters of letters, digits and . _ - (starting with a letter or digit)';

export const accessKeyName = z.string({ message: 'must be a string' }).regex(NAME, { message: NAME_RULE });

const createBody = z.strictObject({
  name: accessKeyName,
  expiration: z.string({ message: 'must be an ISO 8601 timestamp string' }).optional(),
});

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Named access keys: a person may hold several (one per laptop, notebook, pipeline), listed by name
 * and revoked one at a time. A service account's new key replaces whatever token it held.
 */
export const ACCESS_KEY_ROUTES: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: '/mlflow/permissions/users/:username/access-keys',
    summary:
      "Create a named access key (shown once) for yourself (a person), or as an admin for any user; a person's other keys stay valid, a service account's previous token is revoked",
    access: 'self',
    body: createBody,
    successStatus: 201,
    handler: async (req, deps) => {
      const body = req.body as z.infer<typeof createBody>;
      const user = await requireUser(deps, req.params.username!);
      refuseMinting(req.principal, user);
      const issued = await deps.tokens.issueNamed(req.principal.username, user, body.name, body.expiration);
      return {
        status: 201,
        body: {
          token: issued.token,
          username: user.username,
          name: body.name,
          expires_at: iso(issued.expiresAt),
          message: user.isServiceAccount
            ? `Access key '${body.name}' for ${user.username} created; it is shown only once. The service account's previous token no longer works`
            : `Access key '${body.name}' for ${user.username} created; it is shown only once`,
        },
      };
    },
  },
  {
    method: 'GET',
    path: '/mlflow/permissions/users/:username/access-keys',
    summary: "List a user's named access keys that still work (names and dates, never the token)",
    access: 'self',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      const keys = (await deps.tokens.listNamed(user.id)).map((k) => ({ name: k.name, created_at: iso(k.createdAt), expires_at: iso(k.expiresAt) }));
      return { status: 200, body: { access_keys: keys } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/permissions/users/:username/access-keys/:name',
    summary: "Revoke one of a user's named access keys; the others keep working",
    access: 'self',
    handler: async (req, deps) => {
      const name = req.params.name!;
      if (!NAME.test(name)) throw badRequest(`access key name ${NAME_RULE}`);
      const user = await requireUser(deps, req.params.username!);
      await deps.tokens.revokeNamed(req.principal.username, user, name);
      return { status: 200, body: { revoked: name } };
    },
  },
];
