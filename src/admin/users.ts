import { z } from 'zod';
import { badRequest, conflict } from '../errors.js';
import { userJson, type SignIn, type User } from '../principals/types.js';
import { groupNamesOf, requireUser } from './lookups.js';
import type { UserAnswer } from './api-types.js';
import type { AdminDeps, AdminRoute } from './types.js';
import { usernameSchema } from './validation.js';

/**
 * `local`: access tokens and the sign-in page, never an OIDC sign-in. `oidc`: a person who signs in
 * through the identity provider; the account of their first sign-in under this name is linked to
 * them, and only it signs in as them after that.
 */
const signInSchema = z.enum(['local', 'oidc'], { message: "must be 'local' or 'oidc'" });

/**
 * A user's name for people: stored and shown in tables (CLI, UI), so free text without control characters
 * (a NUL PostgreSQL cannot store, ANSI escapes and newlines a terminal would act on), as group names.
 */
const displayNameSchema = z
  .string({ message: 'must be a string' })
  .min(1, 'must not be empty')
  .max(256, 'must be at most 256 characters')
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters');

const createUserBody = z
  .strictObject({
    username: usernameSchema,
    display_name: displayNameSchema.optional(),
    is_admin: z.boolean({ message: 'must be a boolean' }).default(false),
    is_service_account: z.boolean({ message: 'must be a boolean' }).default(false),
    /**
     * MLflow basic-auth's `create_user` (AuthServiceClient) sends a password: flowgate keeps none (clients
     * authenticate with access tokens), so it is read, never stored, and the answer is basic-auth's 200.
     */
    password: z.string({ message: 'must be a string' }).min(1, 'must not be empty').optional(),
    /** Absent: `oidc` for a person where OIDC is configured (they await their first sign-in), else `local`. */
    sign_in: signInSchema.optional(),
  })
  .refine((b) => !(b.is_admin && b.is_service_account), {
    message: 'a service account cannot be an admin',
    path: ['is_admin'],
  })
  .refine((b) => !(b.is_service_account && b.sign_in === 'oidc'), {
    message: 'a service account never signs in',
    path: ['sign_in'],
  });

const updateUserBody = z.strictObject({
  display_name: displayNameSchema.optional(),
  is_admin: z.boolean({ message: 'must be a boolean' }).optional(),
  /** `oidc` links a local user to the identity-provider account of their next sign-in; `local` unlinks. */
  sign_in: signInSchema.optional(),
});

/**
 * An administrator creating a person where people sign in through the identity provider means
 * someone who will sign in there (granted things ahead of it); service accounts never sign in.
 */
export const defaultSignIn = (deps: AdminDeps, isServiceAccount: boolean): SignIn => (deps.oidcSignIn && !isServiceAccount ? 'oidc' : 'local');

async function createUser(deps: AdminDeps, actor: string, body: z.infer<typeof createUserBody>): Promise<User> {
  // Its cluster's service account takes the name at its first call: anyone holding it first would lock that out.
  if (deps.clusterNames?.isUser(body.username) === true)
    throw badRequest(
      `User name '${body.username}' has the shape of a Kubernetes service account's name, which only the kubernetes issuer makes (at the service account's first call); grant its namespace's group instead`,
    );
  if (await deps.directory.userByName(body.username)) throw conflict(`User '${body.username}' already exists`);
  return deps.principalWriter.createUser(actor, {
    username: body.username,
    displayName: body.display_name ?? body.username,
    isAdmin: body.is_admin,
    isServiceAccount: body.is_service_account,
    signIn: body.sign_in ?? defaultSignIn(deps, body.is_service_account),
  });
}

/** A user as an administrator's views show them: the bootstrap admin marked, since no change through the API reaches it. */
export const adminUserJson = (deps: AdminDeps, user: User) => ({
  ...userJson(user),
  ...(deps.principalWriter.isBootstrapAdmin(user) ? { bootstrap: true } : {}),
});

/** The calling user, answered in the shape `answer` gives (MLflow's `users/current`, flowgate's own). */
export const callingUserRoute = (path: string, summary: string, answer: (user: User, deps: AdminDeps) => object | Promise<object>): AdminRoute => ({
  method: 'GET',
  path,
  summary,
  access: 'authenticated',
  handler: async (req, deps) => ({ status: 200, body: await answer(await requireUser(deps, req.principal.username), deps) }),
});

const create: AdminRoute['handler'] = async (req, deps) => {
  const body = req.body as z.infer<typeof createUserBody>;
  // MLflow's client takes only 200 as success: a basic-auth call (it carries a password) gets it.
  return { status: body.password === undefined ? 201 : 200, body: { user: userJson(await createUser(deps, req.principal.username, body)) } };
};

export const USER_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: '/mlflow/permissions/users',
    summary: 'List all users and service accounts',
    access: 'admin',
    handler: async (_req, deps) => ({ status: 200, body: { users: (await deps.directory.listUsers()).map((u) => adminUserJson(deps, u)) } }),
  },
  {
    method: 'GET',
    path: '/mlflow/permissions/service-accounts',
    summary: 'List service accounts',
    access: 'admin',
    handler: async (_req, deps) => ({ status: 200, body: { service_accounts: (await deps.directory.listUsers(true)).map(userJson) } }),
  },
  {
    method: 'POST',
    path: '/mlflow/users/create',
    summary: 'Create a user or service account',
    access: 'admin',
    body: createUserBody,
    // 200 for MLflow basic-auth's call (it carries a password), which takes no other success.
    successStatus: [201, 200],
    handler: create,
  },
  {
    method: 'POST',
    path: '/mlflow/users',
    summary: 'Create a user or service account (newer path)',
    access: 'admin',
    body: createUserBody,
    // 200 for MLflow basic-auth's call (it carries a password), which takes no other success.
    successStatus: [201, 200],
    handler: create,
  },
  callingUserRoute('/mlflow/permissions/users/current', 'Read the calling user, with their groups', async (user, deps) => ({
    user: { ...userJson(user), groups: await groupNamesOf(deps, user) },
  })),
  {
    method: 'GET',
    path: '/mlflow/permissions/users/:username',
    summary: 'Get a user, with their groups',
    access: 'self',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      return { status: 200, body: { user: { ...adminUserJson(deps, user), groups: await groupNamesOf(deps, user) } } satisfies UserAnswer };
    },
  },
  {
    method: 'PATCH',
    path: '/mlflow/permissions/users/:username',
    summary: "Update a user's display name, admin flag or way of signing in",
    access: 'admin',
    body: updateUserBody,
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      const body = req.body as z.infer<typeof updateUserBody>;
      if (body.is_admin && user.isServiceAccount) throw badRequest('a service account cannot be an admin');
      if (body.is_admin === false && user.username === req.principal.username)
        throw badRequest('you cannot remove your own admin rights');
      const actor = req.principal.username;
      const updated = await deps.sql.transaction(async () => {
        const profile = body.display_name !== undefined || body.is_admin !== undefined || body.sign_in === undefined;
        const after = profile ? await deps.principalWriter.updateUser(actor, user, body.display_name ?? user.displayName, body.is_admin ?? user.isAdmin) : user;
        if (body.sign_in === undefined || !(await deps.principalWriter.setSignIn(actor, after, body.sign_in))) return after;
        return (await deps.directory.userById(user.id))!;
      });
      // Unlinked or relinked: the sessions the identity-provider account opened are no longer this user's,
      // and a remembered check of a password the link retired is no longer good.
      if (body.sign_in !== undefined && body.sign_in !== user.signIn) {
        await deps.endSessionsOf?.(user.id);
        deps.forgetUserCredentials(user.id);
      }
      await deps.policyChanged();
      return { status: 200, body: { user: userJson(updated) } };
    },
  },
  {
    method: 'DELETE',
    path: '/mlflow/permissions/users/:username',
    summary: 'Delete a user with their tokens, memberships and grants',
    access: 'admin',
    handler: async (req, deps) => {
      const user = await requireUser(deps, req.params.username!);
      if (user.username === req.principal.username) throw badRequest('you cannot delete yourself');
      await deps.principalWriter.deleteUser(req.principal.username, user);
      await deps.endSessionsOf?.(user.id);
      deps.forgetUserCredentials(user.id);
      await deps.policyChanged();
      return { status: 200, body: {} };
    },
  },
];
