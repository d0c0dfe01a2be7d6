import type { Permission, ResourceKind } from '../authz/types.js';
import type { SignIn } from '../principals/types.js';

/** Who a grant is for, by name as both systems spell it. */
export interface PlanGrantee {
  readonly type: 'user' | 'group';
  readonly name: string;
}

export interface PlanUser {
  readonly username: string;
  readonly isAdmin: boolean;
  readonly isServiceAccount: boolean;
  readonly displayName?: string;
  /** A werkzeug hash from MLflow basic-auth: the user's old password keeps working (until they mint a token). */
  readonly passwordHash?: string;
  /** How a user this import creates signs in (`local` when absent); an existing user's is never changed. */
  readonly signIn?: SignIn;
}

export interface PlanGrant {
  readonly grantee: PlanGrantee;
  readonly kind: ResourceKind;
  readonly id: string;
  readonly permission: Permission;
}

export interface PlanPattern {
  readonly grantee: PlanGrantee;
  readonly kind: ResourceKind;
  readonly pattern: string;
  readonly permission: Permission;
}

/**
 * What an import would make flowgate hold: read from a plugin's database and mapped to flowgate's
 * model, before anything is written. Every rule that has no exact equivalent is in `notImported`
 * with its reason, never written in a wider form.
 */
export interface ImportPlan {
  /** The plugin and the schema generation its database was read as. */
  readonly source: string;
  readonly users: readonly PlanUser[];
  readonly groups: ReadonlyArray<{ readonly name: string; readonly members: readonly string[] }>;
  readonly grants: readonly PlanGrant[];
  readonly patterns: readonly PlanPattern[];
  /** Rules left out, each with why. */
  readonly notImported: readonly string[];
  /** Things the operator should know (a default that differs, a grant raised to match the plugin's answer). */
  readonly notes: readonly string[];
}

/**
 * Names of the source that flowgate's store (or flowgate's rules for names) keeps out of the import,
 * each with why (see refusals.ts): the plan leaves each out with everything that hangs on it, and
 * lists it under `notImported`.
 */
export interface PlanRefusals {
  readonly users: ReadonlyMap<string, string>;
  readonly groups: ReadonlyMap<string, string>;
  /**
   * The source's users whose namesake in flowgate is a service account. A flowgate service account
   * joins no group (the admin API and SCIM refuse it; only its issuer's token puts it in one): the
   * plan gives them no membership, and what the source answered them through their groups comes over
   * as grants of their own, as for the members of a refused group.
   */
  readonly serviceAccounts?: ReadonlySet<string>;
}

export const NO_REFUSALS: PlanRefusals = { users: new Map(), groups: new Map() };

/** The plugin an import's `source` names (`mlflow-basic-auth (roles, revision …)` → `mlflow-basic-auth`). */
export const pluginOfSource = (source: string): string => source.split(' ')[0]!;

export const granteeText = (g: PlanGrantee) => `${g.type} ${g.name}`;
