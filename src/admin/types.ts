import type { SetUserActive } from '../principals/user-switch.js';
import type { z } from 'zod';
import type { AuditLog } from '../audit/audit-log.js';
import type { Explainer } from '../authz/explain.js';
import type { BatchCall } from './batch.js';
import type { Effective } from '../authz/effective.js';
import type { GrantWriter } from '../authz/grant-writer.js';
import type { GrantsRepo } from '../authz/grants-repo.js';
import type { PatternGrantsRepo } from '../authz/pattern-grants-repo.js';
import type { Grantee } from '../authz/policy.js';
import type { PruneReport } from '../authz/orphan-grants.js';
import type { PatternWriter } from '../authz/pattern-writer.js';
import type { Permission, ResourceKind, ResourceRef } from '../authz/types.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { Principal } from '../principals/types.js';
import type { Sql } from '../store/sql.js';
import type { TokenService } from '../tokens/token-service.js';
import type { ClusterNames } from '../bearer/cluster-names.js';

/**
 * Who may call an admin route:
 * - `admin`: administrators only;
 * - `authenticated`: any signed-in user (their own data);
 * - `self`: the user named by the `username` path parameter, or an admin;
 * - `manage`: admins, or a holder of MANAGE on the resource named by the path.
 */
export type Access = 'admin' | 'authenticated' | 'self' | 'manage';

export interface AdminRequest {
  readonly principal: Principal;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly body: unknown;
}

export interface AdminResult {
  readonly status: number;
  readonly body: unknown;
}

export interface AdminDeps {
  readonly sql: Sql;
  /** Reads principals; every change goes through `principalWriter`. */
  readonly directory: Directory;
  readonly principalWriter: PrincipalWriter;
  /** Reads grants; every change goes through `grantWriter`. */
  readonly grants: GrantsRepo;
  readonly grantWriter: GrantWriter;
  /** Reads pattern grants; every change goes through `patternWriter`. */
  readonly patternGrants: PatternGrantsRepo;
  readonly patternWriter: PatternWriter;
  readonly audit: AuditLog;
  readonly tokens: TokenService;
  /** Called after any change to users, groups, memberships or grants: drops the affected caches. */
  readonly policyChanged: () => Promise<void>;
  /** Called after grants on these resources changed (cheaper than policyChanged). */
  readonly grantsChanged: (refs: readonly ResourceRef[]) => Promise<void>;
  readonly forgetUserCredentials: (userId: number) => void;
  /** A promise only when an experiment's name must be looked up (the caller holds experiment pattern grants). */
  readonly canManage: (principal: Principal, ref: ResourceRef) => boolean | Promise<boolean>;
  readonly endSessionsOf?: (userId: number) => Promise<number>;
  /** The gate's decision on a request for a principal, with its reasons (the explain route). */
  readonly explain?: Explainer;
  /** Runs admin calls in one transaction (provided by the admin API itself to the batch route). */
  readonly runBatch?: (principal: Principal, calls: readonly BatchCall[]) => Promise<AdminResult[]>;
  /** A user as the gate sees them (admin flag, groups), for explanations. */
  readonly principalOf?: (userId: number) => Principal | undefined | Promise<Principal | undefined>;
  /**
   * A user's effective permission on a resource as the gate decides it (`effectiveOn`; an experiment's
   * name looked up in MLflow when the user holds experiment patterns): the Manage screens use it.
   */
  readonly effectiveOn: (who: Grantee, ref: ResourceRef) => Promise<Effective>;
  /**
   * People sign in through an OIDC identity provider (FLOWGATE_OIDC_ISSUER_URL is set): a person an
   * administrator creates without `sign_in` then awaits their first sign-in, as pre-creating someone
   * to grant them things ahead of it means.
   */
  readonly oidcSignIn?: boolean;
  /** A user's live browser sessions, and ending one of them (mlflow-oidc-auth's session routes). */
  readonly userSessions?: {
    readonly list: (userId: number) => Promise<ReadonlyArray<{ id: number; createdAt: number; lastSeenAt: number; expiresAt: number }>>;
    readonly end: (userId: number, sessionId: number) => Promise<boolean>;
  };
  /** Removes (or with `dryRun` only finds) the grants of resources MLflow no longer has, asking MLflow through each kind's look-up. */
  readonly pruneOrphans?: (actor: string, dryRun: boolean) => Promise<PruneReport>;
  /** Disables (ending tokens and sessions on every flowgate) or enables a user (src/principals/user-switch.ts). */
  readonly setUserActive?: SetUserActive;
  /**
   * The user names only a kubernetes issuer makes (clusterNamesOf(config.bearer)): `users/create`
   * makes no user or service account of one, which would lock the cluster's service account out.
   * Absent: none is refused (as with no kubernetes issuer).
   */
  readonly clusterNames?: ClusterNames;
}

export interface AdminRoute {
  readonly method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Relative to `/api/2.0` (and mirrored under `/ajax-api/2.0`), find-my-way syntax. */
  readonly path: string;
  /** `3.0`: served under `/api/3.0` and `/ajax-api/3.0` instead, where MLflow's basic-auth serves its role and permission routes. */
  readonly api?: '3.0';
  readonly summary: string;
  readonly access: Access;
  /** For `manage` access: which resource the path names. */
  readonly resource?: { readonly kind: ResourceKind; readonly param: string };
  readonly body?: z.ZodType;
  /**
   * The status a success is answered with (200 when absent), or each of them where the answer tells
   * cases apart (a pattern grant's 201 created, 200 changed): the OpenAPI document lists each.
   */
  readonly successStatus?: number | readonly number[];
  /**
   * The query string the route reads, as the object schema its handler reads it with: the OpenAPI
   * document lists each field as a query parameter, required where the schema requires it (an array
   * field is a repeated parameter). Absent: the route reads no query.
   */
  readonly query?: z.ZodObject;
  readonly handler: (req: AdminRequest, deps: AdminDeps) => AdminResult | Promise<AdminResult>;
}
