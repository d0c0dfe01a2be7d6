import { nameInOtherCase, type NameHolder } from '../oidc/provision.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { Group, Origin, User } from '../principals/types.js';
import type { Sql } from '../store/sql.js';
import type { BearerIdentity } from './verify.js';

export const BEARER_ACTOR = 'bearer';

export type BearerProvisionResult =
  | { readonly ok: true; readonly user: User; readonly changed: boolean }
  | { readonly ok: false; readonly holder: NameHolder | 'service_account' | 'disabled' }
  /** An account linked to no one whose token's name may not make or link a user (`BearerIdentity.nameRefused`). */
  | { readonly ok: false; readonly holder: 'unusable_name' };

/** A Kubernetes service account's subject is always `system:serviceaccount:<namespace>:<name>`. */
const originOf = (id: BearerIdentity): Origin => (id.subject.startsWith('system:serviceaccount:') ? 'kubernetes' : 'bearer');

export interface BearerProvisionOptions {
  /** The bootstrap admin: no token ever reaches it. */
  readonly protectedAdmin: string | undefined;
  /**
   * The issuer of OIDC sign-in (FLOWGATE_OIDC_ISSUER_URL): a token of that issuer is the same
   * identity-provider account a sign-in is, so it may bind a person an administrator created for
   * OIDC and who awaits a first sign-in, as that sign-in would. Tokens of other issuers never do.
   */
  readonly signInIssuer: string | undefined;
}

export const sameIssuer = (a: string, b: string | undefined) => b !== undefined && a.replace(/\/+$/, '') === b.replace(/\/+$/, '');

/**
 * A verified token's account applied to the store, in one transaction, by OIDC sign-in's rules
 * (src/oidc/provision.ts): who calls is the issuer's account (`iss` + `sub`), never the name alone.
 * - The user bound to this account is the caller, whatever name the token carries now (none, or one
 *   `nameRefused` refuses: it is asked only of an account linked to no one).
 * - Otherwise the name creates a user bound to the account (a service account when the issuer makes
 *   them), or binds the OIDC user of that name awaiting a first sign-in (sign-in's issuer only).
 * - A name held by anyone else (the bootstrap admin, a local user or service account, a user bound
 *   to another account of this or another issuer) is refused, and nothing changes.
 * - A name held only in another case creates no second user: it binds a person SCIM made who awaits
 *   a first sign-in (sign-in's issuer only), and is refused otherwise (`nameInOtherCase`).
 * Then the memberships become exactly the token's groups (when the issuer says where they are). The
 * admin flag is never changed by a token.
 */
export async function provisionBearer(
  sql: Sql,
  directory: Directory,
  writer: PrincipalWriter,
  o: BearerProvisionOptions,
  id: BearerIdentity,
): Promise<BearerProvisionResult> {
  const account = { issuer: id.issuer, subject: id.subject };
  return sql.transaction(async (): Promise<BearerProvisionResult> => {
    let changed = false;
    let user = await directory.userBySubject(account);
    if (!user && id.nameRefused) return { ok: false, holder: 'unusable_name' };
    // Either the linked user or a usable name, from here on.
    const username = id.username!;
    if ((user?.username ?? username) === o.protectedAdmin) return { ok: false, holder: 'bootstrap_admin' };
    if (user?.disabledAt != null) return { ok: false, holder: 'disabled' };
    if (!user) {
      const mayBindPending = !id.serviceAccount && sameIssuer(id.issuer, o.signInIssuer);
      let named = await directory.userByName(username);
      if (!named) {
        const other = await nameInOtherCase(directory, username, o.protectedAdmin, mayBindPending);
        if (other && 'holder' in other) return { ok: false, holder: other.holder };
        named = other?.bind;
      }
      if (named) {
        const holder = named.disabledAt != null ? 'disabled' : refusal(named, mayBindPending);
        if (holder) return { ok: false, holder };
        if (!(await writer.bindSubject(BEARER_ACTOR, named, account))) return { ok: false, holder: 'other_account' };
        user = (await directory.userById(named.id))!;
      } else {
        user = await writer.createUser(BEARER_ACTOR, {
          username,
          displayName: id.displayName,
          isAdmin: false,
          isServiceAccount: id.serviceAccount,
          oidc: account,
          origin: originOf(id),
        });
      }
      changed = true;
    }
    if (id.groups) {
      const groups: Group[] = [];
      for (const name of id.groups) groups.push((await directory.groupByName(name)) ?? (await writer.createGroup(BEARER_ACTOR, name, originOf(id))));
      if (await writer.setMemberships(BEARER_ACTOR, user, groups)) changed = true;
    }
    return { ok: true, user, changed };
  });
}

/** Who holds the name, when this account may not become them; undefined for a person awaiting a first sign-in that this token may bind. */
function refusal(user: User, mayBindPending: boolean): NameHolder | 'service_account' | undefined {
  if (user.isServiceAccount) return 'service_account';
  if (user.signIn !== 'oidc') return 'local_user';
  if (user.oidcSubject !== null) return 'other_account';
  return mayBindPending ? undefined : 'other_account';
}
