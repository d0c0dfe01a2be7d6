import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { FlowgateError } from '../errors.js';
import type { CredentialLoader } from '../http/credentials.js';
import type { Logger } from '../logging.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalCache } from '../principals/principal-cache.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { Principal } from '../principals/types.js';
import type { Sql } from '../store/sql.js';
import type { BearerConfig } from './config.js';
import { KeysUnavailable } from './keys.js';
import { provisionBearer, sameIssuer } from './provision.js';
import { clusterNamesOf } from './cluster-names.js';
import { createBearerVerifier, InvalidToken, NotAdmitted, type AdmissionRule, type BearerIdentity } from './verify.js';

export { type BearerConfig } from './config.js';

export const BEARER_CHALLENGE = { 'WWW-Authenticate': 'Bearer error="invalid_token"' } as const;

/** A 401 in MLflow's error JSON with RFC 6750's challenge; the message never holds the token or anything read from it. */
export const invalidToken = (why: string) => new FlowgateError('UNAUTHENTICATED', `Invalid bearer token: ${why}`, { ...BEARER_CHALLENGE });

/**
 * A valid token of an account this server does not admit (FLOWGATE_OIDC_ALLOWED_ROLES, an issuer's
 * `required_groups`): a 403 in MLflow's error JSON, as sign-in's "Access not granted", with RFC 6750's
 * `insufficient_scope` (the token is fine; what it proves is not let in).
 */
export const notAdmitted = () =>
  new FlowgateError('PERMISSION_DENIED', "Bearer token not admitted: its account holds none of the roles or groups this server admits", {
    'WWW-Authenticate': 'Bearer error="insufficient_scope"',
  });

/** Sign-in's role rules (FLOWGATE_OIDC_*), applied to tokens of the sign-in issuer as to a sign-in. */
export interface SignInRoles {
  /** FLOWGATE_OIDC_ALLOWED_ROLES: when set (non-empty), only holders of one of them, or of the admin role, are admitted. */
  readonly allowedRoles: readonly string[] | undefined;
  /** FLOWGATE_OIDC_ADMIN_ROLE: its holders are admitted whatever the allowed roles. */
  readonly adminRole: string | undefined;
  /** FLOWGATE_OIDC_GROUPS_CLAIM: where the roles are read when the issuer has no `groups_claim`. */
  readonly groupsClaim: string;
}

/**
 * Who is admitted at all, per issuer: an issuer's own `required_groups` (at its `groups_claim`), and for
 * the sign-in issuer's OIDC tokens sign-in's allowed roles (at the issuer's `groups_claim`, else at
 * FLOWGATE_OIDC_GROUPS_CLAIM), the admin role counting as allowed, as at sign-in.
 */
export function admissionRules(config: BearerConfig, signInIssuer: string | undefined, signIn: SignInRoles | undefined): AdmissionRule[] {
  const rules: AdmissionRule[] = [];
  for (const issuer of config.issuers) {
    if (issuer.kind !== 'oidc') continue;
    if (issuer.required_groups && issuer.groups_claim !== null)
      rules.push({ issuer: issuer.issuer, rule: 'required_groups', claim: issuer.groups_claim, anyOf: issuer.required_groups });
    const allowed = signIn?.allowedRoles?.filter((r) => r !== '') ?? [];
    if (signIn && allowed.length > 0 && sameIssuer(issuer.issuer, signInIssuer))
      rules.push({
        issuer: issuer.issuer,
        rule: 'allowed_roles',
        claim: issuer.groups_claim ?? signIn.groupsClaim,
        anyOf: signIn.adminRole !== undefined ? [...allowed, signIn.adminRole] : allowed,
      });
  }
  return rules;
}

export interface BearerDeps {
  readonly config: BearerConfig;
  readonly sql: Sql;
  readonly directory: Directory;
  readonly principalWriter: PrincipalWriter;
  readonly principals: PrincipalCache;
  /** Memberships or users changed by a first use: drop the principal cache. */
  readonly policyChanged: () => void | Promise<void>;
  readonly protectedAdmin: string | undefined;
  /** FLOWGATE_OIDC_ISSUER_URL, when sign-in is on (see provisionBearer). */
  readonly signInIssuer: string | undefined;
  /** Sign-in's role rules, applied to the sign-in issuer's tokens (see admissionRules). */
  readonly signInRoles?: SignInRoles | undefined;
  readonly cacheSize: number;
  readonly logger: Logger;
  readonly now?: () => number;
}

export interface BearerModule {
  readonly loader: CredentialLoader;
  /** Drops every verified token (tests; a changed principal is re-checked on its own, see the loader). */
  forgetAll(): void;
}

interface Verified {
  readonly userId: number;
  readonly account: { readonly issuer: string; readonly subject: string };
  readonly expiresAt: number;
  /**
   * The principal the account's binding to `userId` was last confirmed against. The principal cache
   * makes a new object at every fill of a user (after any change to users or memberships, here or on
   * another flowgate on the store, or an eviction), so a hit answers at once only while the cache still
   * holds this very object; any other (the user unlinked, deleted, or a new user given the same id, and
   * loaded again by a request of theirs) is confirmed against the store first.
   */
  confirmed: Principal | undefined;
}

const BEARER = /^bearer +/i;

/**
 * `Authorization: Bearer <JWT>` from the configured issuers. A verified token is cached (by its
 * SHA-256, bounded, never past its `exp`) with the user it proved, so the hot path is a hash and
 * two map reads, synchronous while the principal is cached too. A miss verifies the signature with
 * the issuer's keys and applies the account to the store (first use creates and binds the principal).
 */
export function createBearer(d: BearerDeps): BearerModule {
  const now = d.now ?? Date.now;
  const verifier = createBearerVerifier(
    d.config,
    (issuer, err) => d.logger.warn({ issuer, err: { message: err.message } }, 'bearer issuer keys could not be read'),
    now,
    admissionRules(d.config, d.signInIssuer, d.signInRoles),
  );
  const verified = new LRUCache<string, Verified>({ max: d.cacheSize });
  /** One verification per token at a time: a client's burst of first requests provisions once. */
  const inFlight = new Map<string, Promise<Principal>>();
  const options = { protectedAdmin: d.protectedAdmin, signInIssuer: d.signInIssuer };
  const clusterNames = clusterNamesOf(d.config);
  const issuerKinds = new Map(d.config.issuers.map((i) => [i.issuer, i.kind]));

  /** A token of a non-kubernetes issuer: a service account's name makes or links no one, a namespace group is left out. */
  function withoutClusterNames(identity: BearerIdentity): BearerIdentity {
    if (!clusterNames.any || issuerKinds.get(identity.issuer) === 'kubernetes') return identity;
    if (!identity.nameRefused && identity.username !== undefined && clusterNames.isUser(identity.username))
      identity = {
        ...identity,
        nameRefused: { why: "its name is of the shape of a Kubernetes service account's, which only a kubernetes issuer makes", holder: 'kubernetes_name' },
      };
    const dropped = identity.groups?.filter((g) => clusterNames.isGroup(g)) ?? [];
    if (dropped.length === 0) return identity;
    d.logger.warn({ issuer: identity.issuer, user: identity.username, groups: dropped }, "bearer token's groups of a Kubernetes namespace's shape left out: only a kubernetes issuer fills them");
    return { ...identity, groups: identity.groups!.filter((g) => !clusterNames.isGroup(g)) };
  }

  async function provision(identity: BearerIdentity): Promise<number> {
    let result;
    try {
      result = await provisionBearer(d.sql, d.directory, d.principalWriter, options, identity);
    } catch (e) {
      // Two first uses of one account racing (another replica, another token): the loser finds the winner's user.
      if (!(e instanceof FlowgateError && e.code === 'RESOURCE_ALREADY_EXISTS')) throw e;
      result = await provisionBearer(d.sql, d.directory, d.principalWriter, options, identity);
    }
    if (!result.ok && result.holder === 'unusable_name') {
      const refused = identity.nameRefused!;
      if (refused.holder) d.logger.warn({ issuer: identity.issuer, user: identity.username, holder: refused.holder }, "bearer token refused: its name is a Kubernetes service account's");
      else d.logger.info({ why: refused.why }, 'bearer token refused');
      throw invalidToken(refused.why);
    }
    if (!result.ok && result.holder === 'disabled') {
      d.logger.warn({ issuer: identity.issuer, user: identity.username }, 'bearer token refused: its user is disabled');
      throw invalidToken('its user is disabled');
    }
    if (!result.ok) {
      d.logger.warn({ issuer: identity.issuer, user: identity.username, holder: result.holder }, 'bearer token refused: its name belongs to another flowgate user');
      throw invalidToken("its account is not linked to a flowgate user, and its name belongs to another one");
    }
    if (result.changed) await d.policyChanged();
    return result.user.id;
  }

  async function verifyAndLoad(token: string, key: string): Promise<Principal> {
    let identity: BearerIdentity;
    try {
      identity = await verifier.verify(token);
    } catch (e) {
      if (e instanceof KeysUnavailable) throw new FlowgateError('TEMPORARILY_UNAVAILABLE', 'The bearer token cannot be checked now: its issuer\'s keys could not be read');
      if (e instanceof InvalidToken) {
        d.logger.info({ why: e.why }, 'bearer token refused');
        throw invalidToken(e.why);
      }
      if (e instanceof NotAdmitted) {
        d.logger.warn({ issuer: e.issuer, user: e.username, rule: e.rule }, 'bearer token refused: its account holds none of the roles or groups admitted');
        throw notAdmitted();
      }
      throw e;
    }
    const userId = await provision(withoutClusterNames(identity));
    const account = { issuer: identity.issuer, subject: identity.subject };
    const principal = await confirm(account, userId);
    if (!principal) throw invalidToken('its user was just removed or unlinked');
    if (identity.expiresAt > now())
      verified.set(key, { userId, account, expiresAt: identity.expiresAt, confirmed: principal }, { ttl: Math.max(1, identity.expiresAt - now()) });
    return principal;
  }

  /**
   * The principal of `userId` when `account` is still bound to that user, else undefined. The principal
   * is taken first and the binding read after it: a change that lands between the two is seen by the
   * read, and a change after the read drops the principal cache, so the object returned is never the
   * one a later hit finds and trusts without asking again.
   */
  async function confirm(account: Verified['account'], userId: number): Promise<Principal | undefined> {
    const principal = await d.principals.principal(userId, 'bearer');
    if (!principal) return undefined;
    const bound = await d.directory.userBySubject(account);
    return bound?.id === userId ? principal : undefined;
  }

  const load = (token: string, key: string): Promise<Principal> => {
    let pending = inFlight.get(key);
    if (!pending) {
      pending = verifyAndLoad(token, key).finally(() => inFlight.delete(key));
      inFlight.set(key, pending);
    }
    return pending;
  };

  const loader: CredentialLoader = (req) => {
    const header = req.headers.authorization;
    if (header === undefined || !BEARER.test(header)) return undefined;
    const token = header.replace(BEARER, '').trim();
    if (token.length > d.config.maxTokenBytes) throw invalidToken('the token is too large');
    if (token === '') throw invalidToken('the token is missing');
    const key = createHash('sha256').update(token).digest('base64url');
    const hit = verified.get(key);
    if (hit && hit.expiresAt > now()) {
      const principal = d.principals.principal(hit.userId, 'bearer');
      if (principal !== undefined && principal === hit.confirmed) return principal;
      // The user was loaded afresh since the binding was confirmed (users or memberships changed, here
      // or on another flowgate on the store; whoever loaded them, their own Basic request included):
      // the account must still be bound to this user id. Unlinked, deleted (the id perhaps another
      // user's now) or bound to someone else since: the token is checked, and its account applied, again.
      return confirm(hit.account, hit.userId).then((p) => {
        if (!p) {
          if (verified.get(key) === hit) verified.delete(key);
          return load(token, key);
        }
        if (verified.get(key) === hit) hit.confirmed = p;
        return p;
      });
    }
    if (hit) verified.delete(key);
    return load(token, key);
  };

  return {
    loader,
    forgetAll() {
      verified.clear();
    },
  };
}
