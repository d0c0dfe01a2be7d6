import type { ClusterNames } from '../bearer/cluster-names.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { Group, User } from '../principals/types.js';
import type { Sql } from '../store/sql.js';
import { EMAIL_CLAIM, emailVerified, readClaimPath, rolesFrom, stringClaim, type Claims } from './claims.js';
import { storableDisplayName } from '../principals/display-name.js';

export interface ProvisionOptions {
  readonly usernameClaim: string;
  /** FLOWGATE_OIDC_INSECURE_ALLOW_UNVERIFIED_EMAIL: an unverified address names its user too. */
  readonly allowUnverifiedEmail?: boolean | undefined;
  readonly displayNameClaim: string;
  readonly groupsClaim: string;
  readonly adminRole: string | undefined;
  readonly allowedRoles: readonly string[] | undefined;
  /** The bootstrap admin: no sign-in ever reaches it. */
  readonly protectedAdmin: string | undefined;
  /** The names only a kubernetes bearer issuer makes: no sign-in takes such a user name or joins such a group. */
  readonly clusterNames?: ClusterNames | undefined;
}

/**
 * Why a name could not be signed in to, for the log only (the page says the same for all, so a
 * sign-in learns nothing about who holds a name): the bootstrap admin, a local user (tokens, the
 * sign-in page), an OIDC user linked to another identity-provider account, or a user whose name is
 * the claim in another case and whom this account may not become (see `nameInOtherCase`), or a
 * name of a Kubernetes service account's shape, which only a kubernetes bearer issuer makes.
 */
export type NameHolder = 'bootstrap_admin' | 'local_user' | 'other_account' | 'name_in_other_case' | 'kubernetes_name';

export type ProvisionResult =
  | { readonly ok: true; readonly user: User; readonly roles: readonly string[]; readonly changed: boolean }
  | {
      readonly ok: false;
      readonly reason: 'no_username' | 'bad_username' | 'unverified_email' | 'no_subject' | 'service_account' | 'role_not_allowed' | 'name_taken' | 'disabled';
      readonly username?: string;
      readonly holder?: NameHolder;
    };

const USERNAME = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/;
const ACTOR = 'oidc';

/**
 * A login's claims applied to the store, in one transaction. Who signs in is the identity-provider
 * account (the ID token's `iss` and `sub`), never the name claim alone: the OIDC specification
 * does not make `preferred_username` unique, and flowgate's local users share its name space.
 * - The user bound to this account signs in, whatever name the provider sends now.
 * - Otherwise the name claim creates a user bound to the account, or binds the OIDC user of that
 *   name still awaiting their first sign-in (made by an administrator, or from before bindings).
 * - A name held by anyone else (the bootstrap admin, a local user, a service account, an OIDC user
 *   bound to another account) is refused.
 * - A name no one holds exactly but someone holds in another case creates no second user: it binds
 *   that one user when SCIM made them and they await a first sign-in, and is refused otherwise
 *   (`nameInOtherCase`).
 * Then the admin flag follows the admin role (when one is configured); one group per role is created
 * on first sight; and the user's memberships become exactly the roles in this token. Refusals
 * change nothing.
 */
export async function provisionLogin(sql: Sql, directory: Directory, writer: PrincipalWriter, o: ProvisionOptions, claims: Claims): Promise<ProvisionResult> {
  const claimed = stringClaim(claims, o.usernameClaim);
  const issuer = typeof claims.iss === 'string' ? claims.iss : undefined;
  const subject = typeof claims.sub === 'string' ? claims.sub : undefined;
  if (!issuer || !subject) return { ok: false, reason: 'no_subject', ...(claimed ? { username: claimed } : {}) };
  const account = { issuer, subject };
  const roles = rolesFrom(readClaimPath(claims, o.groupsClaim));
  const hasAdminRole = o.adminRole !== undefined && roles.includes(o.adminRole);

  if (o.allowedRoles && o.allowedRoles.length > 0 && !hasAdminRole && !roles.some((r) => o.allowedRoles!.includes(r)))
    return { ok: false, reason: 'role_not_allowed', ...(claimed ? { username: claimed } : {}) };
  // A role named like a Kubernetes namespace's group would carry that namespace's grants: not joined.
  const joined = o.clusterNames?.any ? roles.filter((r) => !o.clusterNames!.isGroup(r)) : roles;

  /**
   * Why the name claim may not create a user or link one. Asked only of an account linked to no one:
   * a linked account is its user whatever the provider sends now (no name, another one, an address
   * it has since made unverified), since the name no longer decides who signs in.
   */
  const unusableName = (): Extract<ProvisionResult, { ok: false }> | undefined => {
    if (!claimed) return { ok: false, reason: 'no_username' };
    if (!USERNAME.test(claimed)) return { ok: false, reason: 'bad_username', username: claimed };
    // An address the provider has not verified could be anyone's: it would take a user created ahead under it, or squat it.
    if (o.usernameClaim === EMAIL_CLAIM && !o.allowUnverifiedEmail && !emailVerified(claims)) return { ok: false, reason: 'unverified_email', username: claimed };
    if (o.clusterNames?.isUser(claimed)) return { ok: false, reason: 'name_taken', username: claimed, holder: 'kubernetes_name' };
    return undefined;
  };

  return sql.transaction(async (): Promise<ProvisionResult> => {
    let changed = false;
    let user = await directory.userBySubject(account);
    const unusable = user ? undefined : unusableName();
    if (unusable) return unusable;
    // Either the linked user or a usable name claim, from here on.
    const username = claimed ?? user!.username;
    // A bearer issuer with service_accounts: true may have made this account a service account: it never becomes a person here.
    if (user?.isServiceAccount) return { ok: false, reason: 'service_account', username };
    // (A bound user whom configuration has named the bootstrap admin since is refused too.)
    if ((user?.username ?? username) === o.protectedAdmin) return { ok: false, reason: 'name_taken', username, holder: 'bootstrap_admin' };
    // Disabled by an administrator or the identity provider's SCIM: no sign-in re-enables them.
    if (user?.disabledAt != null) return { ok: false, reason: 'disabled', username };
    const displayName = storableDisplayName(stringClaim(claims, o.displayNameClaim), user?.username ?? username);
    if (!user) {
      let named = await directory.userByName(username);
      const refused = named && refusal(named);
      if (refused) return { ok: false, username, ...refused };
      if (named?.disabledAt != null) return { ok: false, reason: 'disabled', username };
      if (!named) {
        const other = await nameInOtherCase(directory, username, o.protectedAdmin, true);
        if (other && 'holder' in other)
          return other.holder === 'disabled' ? { ok: false, reason: 'disabled', username } : { ok: false, reason: 'name_taken', username, holder: other.holder };
        named = other?.bind;
      }
      // The name's OIDC user awaiting a first sign-in is bound now; of two sign-ins racing for it, one is.
      if (named && !(await writer.bindSubject(ACTOR, named, account))) return { ok: false, reason: 'name_taken', username, holder: 'other_account' };
      user = named ?? (await writer.createUser(ACTOR, { username, displayName, isAdmin: hasAdminRole, isServiceAccount: false, oidc: account, origin: 'oidc' }));
      changed = true;
    }
    const isAdmin = o.adminRole !== undefined ? hasAdminRole : user.isAdmin;
    if (isAdmin !== user.isAdmin || displayName !== user.displayName) {
      user = await writer.updateUser(ACTOR, user, displayName, isAdmin);
      changed = true;
    }
    const groups: Group[] = [];
    for (const role of joined) groups.push((await directory.groupByName(role)) ?? (await writer.createGroup(ACTOR, role, 'oidc')));
    if (await writer.setMemberships(ACTOR, user, groups)) changed = true;
    return { ok: true, user, roles, changed };
  });
}

/** Why an account bound to no user may not sign in as `user`, who holds its name claim; undefined when `user` awaits a first sign-in. */
function refusal(user: User): { reason: 'service_account' | 'name_taken'; holder?: NameHolder } | undefined {
  if (user.isServiceAccount) return { reason: 'service_account' };
  if (user.signIn !== 'oidc') return { reason: 'name_taken', holder: 'local_user' };
  if (user.oidcSubject !== null) return { reason: 'name_taken', holder: 'other_account' };
  return undefined;
}

/**
 * Before a name makes a new user (a first sign-in, a bearer token's first use): whether someone holds
 * it in another case. A second user `Alice` beside `alice` would be an account that whatever manages
 * `alice` misses: SCIM matches names ignoring case (RFC 7643), so the identity provider's
 * de-provisioning of `alice` would leave `Alice` working. So no such user is created. The one user
 * holding the name in another case is bound instead when SCIM made them, they await a first sign-in
 * and they are no administrator (the identity provider that pushed `alice` means the account it now
 * calls `Alice`), and only where the caller may bind a person awaiting a first sign-in at all
 * (`mayBindPending`); anyone else, or two such users, refuse the name. Call inside the provisioning
 * transaction: it holds the user-name lock, so a SCIM create or another first sign-in on another
 * replica cannot make the other case meanwhile.
 */
export async function nameInOtherCase(
  directory: Directory,
  username: string,
  protectedAdmin: string | undefined,
  mayBindPending: boolean,
): Promise<{ readonly bind: User } | { readonly holder: NameHolder | 'disabled' } | undefined> {
  if (protectedAdmin !== undefined && protectedAdmin.toLowerCase() === username.toLowerCase()) return { holder: 'bootstrap_admin' };
  await directory.lockUserNames();
  const others = await directory.usersByNameIgnoringCase(username);
  if (others.length === 0) return undefined;
  const only = others.length === 1 ? others[0]! : undefined;
  const bindable =
    only !== undefined && mayBindPending && only.origin === 'scim' && !only.isAdmin && !only.isServiceAccount && only.signIn === 'oidc' && only.oidcSubject === null;
  if (!bindable) return { holder: 'name_in_other_case' };
  if (only.disabledAt != null) return { holder: 'disabled' };
  return { bind: only };
}
