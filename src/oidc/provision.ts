import type { Directory } from '../principals/directory.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { Group, User } from '../principals/types.js';
import type { Sql } from '../store/sql.js';
import { readClaimPath, rolesFrom, stringClaim, type Claims } from './claims.js';

export interface ProvisionOptions {
  readonly usernameClaim: string;
  readonly displayNameClaim: string;
  readonly groupsClaim: string;
  readonly adminRole: string | undefined;
  readonly allowedRoles: readonly string[] | undefined;
  /** The bootstrap admin: never demoted by a login that lacks the admin role. */
  readonly protectedAdmin: string | undefined;
}

export type ProvisionResult =
  | { readonly ok: true; readonly user: User; readonly roles: readonly string[]; readonly changed: boolean }
  | { readonly ok: false; readonly reason: 'no_username' | 'bad_username' | 'service_account' | 'role_not_allowed'; readonly username?: string };

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/;
const ACTOR = 'oidc';

/**
 * A login's claims applied to the store, in one transaction: the user is created at first login;
 * the admin flag follows the admin role (when one is configured); one group per role is created on
 * first sight; and the user's memberships become exactly the roles in this token. Refusals
 * (service account, no allowed role) change nothing.
 */
export async function provisionLogin(sql: Sql, directory: Directory, writer: PrincipalWriter, o: ProvisionOptions, claims: Claims): Promise<ProvisionResult> {
  const username = stringClaim(claims, o.usernameClaim);
  if (!username) return { ok: false, reason: 'no_username' };
  if (!USERNAME.test(username)) return { ok: false, reason: 'bad_username', username };
  const displayName = (stringClaim(claims, o.displayNameClaim) ?? username).slice(0, 256);
  const roles = rolesFrom(readClaimPath(claims, o.groupsClaim));
  const hasAdminRole = o.adminRole !== undefined && roles.includes(o.adminRole);

  if (o.allowedRoles && o.allowedRoles.length > 0 && !hasAdminRole && !roles.some((r) => o.allowedRoles!.includes(r)))
    return { ok: false, reason: 'role_not_allowed', username };

  return sql.transaction(async (): Promise<ProvisionResult> => {
    let changed = false;
    let user = await directory.userByName(username);
    if (user?.isServiceAccount) return { ok: false, reason: 'service_account', username };
    if (!user) {
      user = await writer.createUser(ACTOR, { username, displayName, isAdmin: hasAdminRole, isServiceAccount: false });
      changed = true;
    } else {
      let isAdmin = user.isAdmin;
      if (o.adminRole !== undefined) isAdmin = hasAdminRole || (user.isAdmin && username === o.protectedAdmin);
      if (isAdmin !== user.isAdmin || displayName !== user.displayName) {
        user = await writer.updateUser(ACTOR, user, displayName, isAdmin);
        changed = true;
      }
    }
    const groups: Group[] = [];
    for (const role of roles) groups.push((await directory.groupByName(role)) ?? (await writer.createGroup(ACTOR, role)));
    if (await writer.setMemberships(ACTOR, user, groups)) changed = true;
    return { ok: true, user, roles, changed };
  });
}
