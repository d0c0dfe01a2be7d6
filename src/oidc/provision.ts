import type { AuditLog } from '../audit/audit-log.js';
import type { Directory } from '../principals/directory.js';
import { userJson, type User } from '../principals/types.js';
import type { Db } from '../store/database.js';
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
export function provisionLogin(db: Db, directory: Directory, audit: AuditLog, o: ProvisionOptions, claims: Claims): ProvisionResult {
  const username = stringClaim(claims, o.usernameClaim);
  if (!username) return { ok: false, reason: 'no_username' };
  if (!USERNAME.test(username)) return { ok: false, reason: 'bad_username', username };
  const displayName = (stringClaim(claims, o.displayNameClaim) ?? username).slice(0, 256);
  const roles = rolesFrom(readClaimPath(claims, o.groupsClaim));
  const hasAdminRole = o.adminRole !== undefined && roles.includes(o.adminRole);

  if (o.allowedRoles && o.allowedRoles.length > 0 && !hasAdminRole && !roles.some((r) => o.allowedRoles!.includes(r)))
    return { ok: false, reason: 'role_not_allowed', username };

  return db.transaction((): ProvisionResult => {
    let changed = false;
    let user = directory.userByName(username);
    if (user?.isServiceAccount) return { ok: false, reason: 'service_account', username };
    if (!user) {
      user = directory.createUser({ username, displayName, isAdmin: hasAdminRole, isServiceAccount: false });
      audit.record({ actor: ACTOR, action: 'user.create', target: `user:${username}`, newValue: userJson(user) });
      changed = true;
    } else {
      let isAdmin = user.isAdmin;
      if (o.adminRole !== undefined) isAdmin = hasAdminRole || (user.isAdmin && username === o.protectedAdmin);
      if (isAdmin !== user.isAdmin || displayName !== user.displayName) {
        directory.updateUser(user.id, displayName, isAdmin);
        const after = directory.userById(user.id)!;
        audit.record({ actor: ACTOR, action: 'user.update', target: `user:${username}`, oldValue: userJson(user), newValue: userJson(after) });
        user = after;
        changed = true;
      }
    }

    const ids: number[] = [];
    for (const role of roles) {
      let group = directory.groupByName(role);
      if (!group) {
        group = directory.createGroup(role);
        audit.record({ actor: ACTOR, action: 'group.create', target: `group:${role}` });
      }
      ids.push(group.id);
    }
    const before = directory.groupsOfUser(user.id).map((g) => g.name);
    const same = before.length === roles.length && before.every((g) => roles.includes(g));
    if (!same) {
      directory.setMemberships(user.id, ids);
      audit.record({
        actor: ACTOR,
        action: 'group.memberships',
        target: `user:${username}`,
        oldValue: { groups: before },
        newValue: { groups: directory.groupsOfUser(user.id).map((g) => g.name) },
      });
      changed = true;
    }
    return { ok: true, user, roles, changed };
  })();
}
