export interface User {
  readonly id: number;
  readonly username: string;
  readonly displayName: string;
  readonly isAdmin: boolean;
  readonly isServiceAccount: boolean;
  readonly createdAt: number;
  /**
   * How the person signs in: `local` (access tokens, the sign-in page) is never reached by an OIDC
   * sign-in; `oidc` is bound to one identity-provider account (`oidcIssuer` + `oidcSubject`), or
   * awaits the first sign-in that binds it when those are null.
   */
  readonly signIn: SignIn;
  readonly oidcIssuer: string | null;
  readonly oidcSubject: string | null;
  /** What created the user (shown on the Manage screens); the rules follow `signIn`, not this. */
  readonly origin: Origin;
  /** The identity provider's id for the user (SCIM `externalId`). */
  readonly externalId: string | null;
  /** When the user was disabled (SCIM `active: false`, or an administrator): no credential of theirs works. */
  readonly disabledAt: number | null;
  /**
   * Who disabled them (null when enabled): SCIM's `active: true` enables only a user SCIM disabled,
   * an administrator's enable either. A disabled row naming neither (an older flowgate wrote it) reads
   * as `admin`, the side SCIM cannot undo.
   */
  readonly disabledBy: DisabledBy | null;
}

/** Who disabled a user: an administrator (admin API, Users screen) or the identity provider's SCIM. */
export type DisabledBy = 'admin' | 'scim';

export type SignIn = 'local' | 'oidc';

/**
 * Where a principal comes from: `local` (the admin API or CLI, the bootstrap admin), `oidc` (a
 * browser sign-in), `bearer` (a JWT of a configured issuer), `kubernetes` (a service-account token),
 * `scim` (pushed by the identity provider).
 */
export type Origin = 'local' | 'oidc' | 'bearer' | 'kubernetes' | 'scim';
export const ORIGINS: readonly Origin[] = ['local', 'oidc', 'bearer', 'kubernetes', 'scim'];

export interface Group {
  readonly id: number;
  readonly name: string;
  readonly createdAt: number;
  /**
   * `scim` groups are the identity provider's: only SCIM changes their members. Every other group's
   * members may follow sign-in claims (docs/machine-identity.md, "Groups: claims and SCIM").
   */
  readonly origin: Origin;
  readonly externalId: string | null;
}

/** Who is calling, as the decision needs it: built once per cache fill, never per request. */
export interface Principal {
  readonly userId: number;
  readonly username: string;
  readonly isAdmin: boolean;
  readonly isServiceAccount: boolean;
  readonly groupIds: readonly number[];
  /** How the caller proved who they are; for logs and metrics. */
  readonly via: 'basic' | 'session' | 'bearer';
}

export function userJson(u: User) {
  return {
    id: u.id,
    username: u.username,
    display_name: u.displayName,
    is_admin: u.isAdmin,
    is_service_account: u.isServiceAccount,
    created_at: new Date(u.createdAt).toISOString(),
    sign_in: u.signIn,
    // Whether the OIDC account is linked yet; the subject itself stays in the store.
    oidc_linked: u.signIn === 'oidc' && u.oidcSubject !== null,
    origin: u.origin,
    disabled: u.disabledAt != null,
    disabled_by: u.disabledBy,
  };
}
