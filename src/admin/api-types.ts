/**
 * The admin API's JSON answers that the Permissions UI (`ui/src/`) reads, declared once for both sides:
 * the handlers here check what they answer against them (`satisfies`), the screens read them. Types
 * only (the UI bundle takes nothing from this file at run time): kinds, permissions and reasons are
 * the closed sets of `src/resources/`, never free strings.
 */
import type { CheckName } from '../authz/route-checks.js';
import type { RouteEntry } from '../authz/types.js';
import type { DisabledBy, Origin, SignIn } from '../principals/types.js';
import type { KINDS, ResourceKind } from '../resources/kind-table.js';
import type { Permission } from '../resources/permissions.js';
import type { GrantReason, Reason, WorkspaceReason } from '../resources/reasons.js';

export type { CheckName } from '../authz/route-checks.js';
export type { Origin, SignIn } from '../principals/types.js';
export type { ResourceKind } from '../resources/kind-table.js';
export type { Permission } from '../resources/permissions.js';
export type { GrantReason, Reason, WorkspaceReason } from '../resources/reasons.js';

/** A searched list's page: the token of the next one, absent on the last. */
export interface Paged {
  readonly next_page_token?: string;
}

/** What a list's answer holds besides the page token (what a handler shapes; the token is added to it). */
export type PageRows<T extends Paged> = Omit<T, 'next_page_token'>;

// ---- users, service accounts, groups -------------------------------------------------------------

/** `users/current`, in MLflow basic-auth's shape: who is signed in. */
export interface Me {
  readonly id: number;
  readonly username: string;
  readonly is_admin: boolean;
}

export interface CurrentUserAnswer {
  readonly user: Me;
  readonly is_basic_auth: false;
}

/** A user or service account (`userJson`). */
export interface UserJson {
  readonly id: number;
  readonly username: string;
  readonly display_name: string;
  readonly is_admin: boolean;
  readonly is_service_account: boolean;
  readonly created_at: string;
  readonly sign_in: SignIn;
  /** Whether an identity-provider account is bound yet (`sign_in` is `oidc`). */
  readonly oidc_linked: boolean;
  /** Where the principal comes from: `local` (admin API, CLI), `oidc` (a sign-in), `bearer`, `kubernetes`, `scim`. */
  readonly origin: Origin;
  /** No credential or sign-in of theirs works until an administrator (or SCIM) enables them. */
  readonly disabled: boolean;
  /** Who disabled them (null when enabled): SCIM's `active: true` enables only a user SCIM disabled (`scim`). */
  readonly disabled_by: DisabledBy | null;
}

/** A user as an administrator's views show them (`adminUserJson`). */
export interface AdminUserJson extends UserJson {
  /** The bootstrap admin (FLOWGATE_ADMIN_USERNAME), which configuration owns. */
  readonly bootstrap?: boolean;
}

/** `GET permissions/users/<name>`. */
export interface UserAnswer {
  readonly user: AdminUserJson & { readonly groups: readonly string[] };
}

/**
 * A user's access tokens in one word: `active` (one works; `expires_at` the latest expiry), `expired`
 * (the last one lapsed; `expires_at` when), `revoked` (every one was revoked; `revoked_at` when), `none`.
 */
export type TokenStateJson =
  | { readonly state: 'active' | 'expired'; readonly expires_at: string }
  | { readonly state: 'revoked'; readonly revoked_at: string }
  | { readonly state: 'none' };

/** `GET permissions/ui/users`: each row with its token state. */
export interface UserSearchAnswer extends Paged {
  readonly users: readonly (AdminUserJson & { readonly token: TokenStateJson })[];
  /** What a person created without `sign_in` gets. */
  readonly sign_in_default: SignIn;
}

export interface GroupRow {
  readonly name: string;
  readonly members: number;
  readonly created_at: string;
}

/** `GET permissions/ui/groups`. */
export interface GroupSearchAnswer extends Paged {
  readonly groups: readonly GroupRow[];
}

/** `GET permissions/groups/<name>/users`. */
export interface GroupMembersAnswer {
  readonly users: readonly UserJson[];
}

/** `PATCH permissions/users/access-token`: the token, shown once. */
export interface IssuedToken {
  readonly token: string;
  readonly username: string;
  readonly expiration: string;
  readonly expires_at: string;
  readonly message: string;
}

/** `GET permissions/access-token-limits`: what an access token's `expiration` may be. */
export interface AccessTokenLimits {
  readonly default_expiration_days: number;
  readonly max_expiration_days: number;
}

// ---- grants ---------------------------------------------------------------------------------------

type Spec<K extends ResourceKind> = (typeof KINDS)[K];

/** The grant JSON's field naming the resource: a kind's admin path parameter (`experiment_id`, `name`). */
export type GrantIdField<K extends ResourceKind = ResourceKind> = Spec<K>['admin']['param'];

/** The grant JSON's field naming the experiment of a kind whose id is `<experiment_id>/<name>` (a scorer's), else none. */
export type GrantExperimentField<K extends ResourceKind = ResourceKind> = Spec<K>['admin'] extends { readonly experiment: infer E extends string } ? E : never;

/** The grantee of a grant or pattern grant: a user's or a group's name. */
export type GranteeNamed = { readonly username: string; readonly group_name?: never } | { readonly group_name: string; readonly username?: never };

/**
 * One grant on a resource of kind `K` as the grant routes answer it (`permissions/<users|groups>/<name>/<segment>[/<id>]`):
 * the resource under the kind's own field (the registry's `admin.param`), then the grantee's.
 */
export type KindGrantOf<K extends ResourceKind> = {
  readonly resource_type: K;
  readonly permission: Permission;
  /** The MLflow workspace the grant is kept in, when it is not the default one (the request's `X-MLFLOW-WORKSPACE`). */
  readonly workspace?: string;
} & {
  readonly [F in GrantIdField<K> | GrantExperimentField<K>]: string;
} & GranteeNamed;

/** One grant, of any kind. */
export type KindGrant = { readonly [K in ResourceKind]: KindGrantOf<K> }[ResourceKind];

/** `GET permissions/<users|groups>/<name>/<segment>`: a grantee's grants on one kind. */
export interface KindGrantsAnswer {
  readonly permissions: readonly KindGrant[];
}

/** A pattern grant (`permissions/patterns`, `permissions/<users|groups>/<name>/patterns`). */
export type PatternGrant = { readonly resource_type: ResourceKind; readonly pattern: string; readonly permission: Permission } & GranteeNamed;

export interface PatternGrantsAnswer {
  readonly patterns: readonly PatternGrant[];
}

// ---- one resource, for the Manage screens (permissions/ui/<segment>/<id>/…) -------------------------

export type GranteeType = 'user' | 'service_account' | 'group';

/** A grant on the resource, by grantee. */
export interface ResourceGrantRow {
  readonly grantee_type: GranteeType;
  readonly name: string;
  readonly permission: Permission;
}

export interface ResourceGrantsAnswer extends Paged {
  readonly grants: readonly ResourceGrantRow[];
}

/** Where a user's effective permission comes from: an administrator's standing, or the grant reason's kind of grant. */
/** Where an effective permission comes from; `workspace`: the caller administers the MLflow workspace it is in. */
export type EffectiveSource = 'admin' | 'direct' | 'group' | 'pattern' | 'workspace' | 'default';

/** A user's effective permission on the resource and why (`groups`: the deciding groups). */
export interface EffectiveRow {
  readonly username: string;
  /** Absent in a manager's view (the grants here only). */
  readonly is_admin?: boolean;
  readonly is_service_account: boolean;
  readonly permission: Permission;
  readonly source: EffectiveSource;
  readonly groups: readonly string[];
}

/** A manager's view of who may use their resource: the grants on it only. */
export type EffectiveScope = 'grants-here';

export interface EffectiveAnswer extends Paged {
  readonly users: readonly EffectiveRow[];
  /** Set when the answer is of the grants here only (a manager who is not an administrator). */
  readonly scope?: EffectiveScope;
}

/** The caller's own permission on one resource of a page; `none`: one they may not read, or that does not exist. */
export interface MyPermission {
  readonly permission: Permission;
  readonly source: EffectiveSource | 'none';
  readonly groups: readonly string[];
}

/** `GET permissions/ui/my-permissions/<segment>?id=…`, by id. */
export interface MyPermissionsAnswer {
  readonly permissions: Readonly<Record<string, MyPermission>>;
}

// ---- explain ---------------------------------------------------------------------------------------

export interface ExplainedPattern {
  readonly pattern: string;
  /** `user:<name>` or `group:<name>`. */
  readonly grantee: string;
  readonly permission: Permission;
}

export interface ExplainedResource {
  readonly kind: ResourceKind;
  readonly id: string;
  readonly direct: Permission | null;
  readonly groups: ReadonlyArray<{ readonly group: string; readonly permission: Permission }>;
  /** The experiment's name, when pattern grants were matched against it. */
  readonly name?: string;
  /** Pattern grants bearing on the user here (theirs, their groups'); absent from older servers. */
  readonly patterns?: readonly ExplainedPattern[];
  readonly effective: Permission;
  /** The grant (or the default) that made `effective`. */
  readonly rule: GrantReason | WorkspaceReason;
  /** When a pattern decided: which. */
  readonly decidingPattern?: ExplainedPattern;
}

export interface CheckOutcome {
  readonly check: CheckName;
  readonly allow: boolean;
  readonly reason: Reason;
}

/** `GET permissions/explain`: the decision on one request for one user, and why (src/authz/explain.ts). */
export interface Explanation {
  readonly username: string;
  readonly route: Pick<RouteEntry, 'method' | 'pattern' | 'need' | 'resource'> | null;
  readonly resources: readonly ExplainedResource[];
  readonly verdict: { readonly allow: boolean; readonly reason: Reason; readonly checks: readonly CheckOutcome[]; readonly message?: string };
}

// ---- audit -----------------------------------------------------------------------------------------

export interface AuditRow {
  readonly id: number;
  readonly at: string;
  readonly actor: string;
  readonly action: string;
  readonly target: string;
  readonly old_value: unknown;
  readonly new_value: unknown;
}

/** `GET permissions/ui/audit`, newest first. */
export interface AuditAnswer extends Paged {
  readonly entries: readonly AuditRow[];
}
