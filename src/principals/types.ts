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
}

export type SignIn = 'local' | 'oidc';

export interface Group {
  readonly id: number;
  readonly name: string;
  readonly createdAt: number;
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
  };
}
