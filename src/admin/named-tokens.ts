import { z } from 'zod';
import { notFound } from '../errors.js';
import type { User } from '../principals/types.js';
import type { AccessKey } from '../tokens/token-service.js';
import { accessKeyName } from './access-keys.js';
import { requireUser } from './lookups.js';
import { refuseMinting, TOKEN_ROUTES } from './tokens.js';
import type { AdminDeps, AdminRequest, AdminResult, AdminRoute } from './types.js';

/**
 * mlflow-oidc-auth 11's token routes beside the ones flowgate already serves, on flowgate's tokens:
 * `PATCH users/access-token` is flowgate's unnamed token (a new one replaces it, as oidc-auth's
 * `default`), and the named tokens are flowgate's named access keys. Yourself, or as an administrator
 * anyone: a manager of a resource never reaches another user's tokens.
 */

const createBody = z.strictObject({
  name: accessKeyName,
  expiration: z.string({ message: 'must be an ISO 8601 timestamp string' }).optional(),
});

const iso = (ms: number) => new Date(ms).toISOString();

/** oidc-auth's token JSON; flowgate keeps no prefix, creator or last use, and lists only keys that still work. */
const tokenJson = (k: AccessKey) => ({
  id: k.id,
  name: k.name,
  token_prefix: null,
  created_at: iso(k.createdAt),
  created_by: null,
  expires_at: iso(k.expiresAt),
  last_used_at: null,
  active: true,
});

const list = async (deps: AdminDeps, user: User): Promise<AdminResult> => ({
  status: 200,
  body: { tokens: (await deps.tokens.listNamed(user.id)).map(tokenJson) },
});

async function create(req: AdminRequest, deps: AdminDeps, user: User): Promise<AdminResult> {
  const { name, expiration } = req.body as z.infer<typeof createBody>;
  refuseMinting(req.principal, user);
  const issued = await deps.tokens.issueNamed(req.principal.username, user, name, expiration);
  const key = (await deps.tokens.listNamed(user.id)).find((k) => k.name === name);
  const made = key ?? { id: 0, name, createdAt: Date.now(), expiresAt: issued.expiresAt };
  return { status: 201, body: { ...tokenJson(made), token: issued.token } };
}

/**
 * One token by oidc-auth's id, or by its name: digits are an id (as oidc-auth's routes take it),
 * anything else a name. Someone else's token reads as one that does not exist.
 */
async function remove(req: AdminRequest, deps: AdminDeps, user: User): Promise<AdminResult> {
  const which = req.params.token_id!;
  const keys = await deps.tokens.listNamed(user.id);
  const key = /^[0-9]{1,15}$/.test(which) ? keys.find((k) => k.id === Number(which)) : keys.find((k) => k.name === which);
  if (!key) throw notFound(`token ${which} not found`);
  await deps.tokens.revokeNamed(req.principal.username, user, key.name);
  return { status: 200, body: { deleted: 1 } };
}

const me = (req: AdminRequest, deps: AdminDeps) => requireUser(deps, req.principal.username);
const named = (req: AdminRequest, deps: AdminDeps) => requireUser(deps, req.params.username!);

const mint = TOKEN_ROUTES.find((r) => r.method === 'PATCH' && r.path === '/mlflow/permissions/users/access-token');
const revokeAll = TOKEN_ROUTES.find((r) => r.method === 'DELETE' && r.path === '/mlflow/permissions/users/:username/access-token');
if (!mint || !revokeAll) throw new Error('the token routes moved: named-tokens.ts reuses them');

export const NAMED_TOKEN_ROUTES: readonly AdminRoute[] = [
  {
    ...mint,
    path: '/mlflow/users/access-token',
    summary: "Replace your access token (or as an administrator any user's), as mlflow-oidc-auth's default token; shown once",
  },
  { method: 'GET', path: '/mlflow/users/current/tokens', summary: 'List your named access tokens that still work', access: 'authenticated', handler: async (req, deps) => list(deps, await me(req, deps)) },
  {
    method: 'POST',
    path: '/mlflow/users/current/tokens',
    summary: 'Create a named access token for yourself, a person (shown once)',
    access: 'authenticated',
    body: createBody,
    successStatus: 201,
    handler: async (req, deps) => create(req, deps, await me(req, deps)),
  },
  {
    method: 'DELETE',
    path: '/mlflow/users/current/tokens/:token_id',
    summary: 'Revoke one of your named access tokens, by id or name',
    access: 'authenticated',
    handler: async (req, deps) => remove(req, deps, await me(req, deps)),
  },
  { method: 'GET', path: '/mlflow/users/:username/tokens', summary: "List a user's named access tokens that still work", access: 'self', handler: async (req, deps) => list(deps, await named(req, deps)) },
  {
    method: 'POST',
    path: '/mlflow/users/:username/tokens',
    summary: 'Create a named access token for a user (shown once)',
    access: 'self',
    body: createBody,
    successStatus: 201,
    handler: async (req, deps) => create(req, deps, await named(req, deps)),
  },
  {
    method: 'DELETE',
    path: '/mlflow/users/:username/tokens/:token_id',
    summary: "Revoke one of a user's named access tokens, by id or name",
    access: 'self',
    handler: async (req, deps) => remove(req, deps, await named(req, deps)),
  },
  {
    method: 'DELETE',
    path: '/mlflow/users/:username/tokens',
    summary: "Revoke all of a user's access tokens",
    access: 'self',
    handler: async (req, deps) => {
      const result = await revokeAll.handler(req, deps);
      return { status: 200, body: { revoked: (result.body as { revoked: number }).revoked } };
    },
  },
];
