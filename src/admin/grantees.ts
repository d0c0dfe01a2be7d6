import type { Grantee } from '../authz/grants-repo.js';
import type { Principal } from '../principals/types.js';
import { requireGroup, requireUser } from './lookups.js';
import type { AdminDeps } from './types.js';
import { groupNameSchema, parseWith } from './validation.js';

/** Who a grant route names in its path: a user or a group, and the JSON field naming them. */
export interface GranteeShape {
  readonly type: Grantee['type'];
  readonly segment: string;
  readonly param: string;
  readonly nameField: string;
}

export const GRANTEES: readonly GranteeShape[] = [
  { type: 'user', segment: 'users', param: 'username', nameField: 'username' },
  { type: 'group', segment: 'groups', param: 'group_name', nameField: 'group_name' },
];

/** The named user or group, which must exist (404 otherwise). */
export async function existingGrantee(deps: AdminDeps, g: GranteeShape, name: string): Promise<Grantee> {
  return g.type === 'user' ? { type: 'user', id: (await requireUser(deps, name)).id } : { type: 'group', id: (await requireGroup(deps, name)).id };
}

/** The named user or group, or undefined when there is none. */
export async function knownGrantee(deps: AdminDeps, g: GranteeShape, name: string): Promise<Grantee | undefined> {
  const found = g.type === 'user' ? await deps.directory.userByName(name) : await deps.directory.groupByName(name);
  return found ? { type: g.type, id: found.id } : undefined;
}

/**
 * The grantee of a new grant. Groups mirror identity-provider roles and appear when someone holding
 * the role first signs in; a team's grants come first (the spec's step 2), so an administrator granting
 * to a group not seen yet creates it (audited). A user must exist.
 */
export async function granteeForGrant(deps: AdminDeps, g: GranteeShape, actor: string, name: string): Promise<Grantee> {
  return (await newGrantee(deps, g, { username: actor, isAdmin: true }, name)).grantee;
}

/**
 * The same, and whether the group was created for it (a new group: the answer says so, since a typo is
 * otherwise silent). Only an administrator makes a group this way: for anyone else (a manager of the
 * resource, a workspace's administrator) a group must exist as a user must, and one that does not is the
 * same 404 as a username no account holds, as mlflow-oidc-auth answers it. Otherwise a manager would make
 * groups, which identity-provider roles then fill, and the answer (`new_group`) would tell them which
 * role names exist.
 */
export async function newGrantee(
  deps: AdminDeps,
  g: GranteeShape,
  actor: Pick<Principal, 'username' | 'isAdmin'>,
  name: string,
): Promise<{ grantee: Grantee; createdGroup: boolean }> {
  if (g.type === 'user' || !actor.isAdmin) return { grantee: await existingGrantee(deps, g, name), createdGroup: false };
  const known = await deps.directory.groupByName(name);
  if (known) return { grantee: { type: 'group', id: known.id }, createdGroup: false };
  const groupName = parseWith(groupNameSchema, name, 'group_name in the path');
  return { grantee: { type: 'group', id: (await deps.principalWriter.createGroup(actor.username, groupName)).id }, createdGroup: true };
}
