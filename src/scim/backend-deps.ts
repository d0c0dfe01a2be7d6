import type { ClusterNames } from '../bearer/cluster-names.js';
import type { Logger } from '../logging.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { SignIn } from '../principals/types.js';
import type { SetUserActive } from '../principals/user-switch.js';
import type { Sql } from '../store/sql.js';

/** Audit entries of SCIM's changes name this actor. */
export const SCIM_ACTOR = 'scim';

export interface ScimBackendDeps {
  readonly sql: Sql;
  readonly directory: Directory;
  readonly principalWriter: PrincipalWriter;
  /** Disables (ending tokens and sessions everywhere) or enables a user. */
  readonly setActive: SetUserActive;
  /** Users or memberships changed: cached principals are stale. */
  readonly principalsChanged: () => void;
  /** Grants went with a deleted user or group: the policy index re-reads (after the deletion commits). */
  readonly policyChanged: () => Promise<void>;
  /** A user's verified tokens and sessions are forgotten in this process (renamed, deleted). */
  readonly forgetUser: (userId: number) => void;
  readonly endSessionsOf: (userId: number) => Promise<number>;
  /** How a person SCIM creates signs in: `oidc` where OIDC sign-in is configured (bound at their first sign-in). */
  readonly signIn: SignIn;
  /** Where SCIM Users are found (a group member's `$ref` is under it). */
  readonly usersBase: string;
  /** The bootstrap admin: SCIM never sees, names or changes it. */
  readonly protectedAdmin: string | undefined;
  /**
   * The user names and groups only a kubernetes issuer makes (clusterNamesOf(config.bearer)): SCIM
   * neither creates nor renames a user or group into one, as no OIDC token or sign-in makes one.
   */
  readonly clusterNames: ClusterNames;
  /** Refusals an operator should hear of (SCIM touching an administrator). */
  readonly logger: Logger;
}

/** Ids in paths and member lists are flowgate's numeric ids; anything else names nothing. */
export const parseId = (id: string | undefined): number | undefined => (id !== undefined && /^[1-9][0-9]{0,14}$/.test(id) ? Number(id) : undefined);
