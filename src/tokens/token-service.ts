import type { AuditLog } from '../audit/audit-log.js';
import { ConfigError } from '../config.js';
import { badRequest, conflict, FlowgateError, notFound } from '../errors.js';
import type { Sql } from '../store/sql.js';
import { DEFAULT_TOKEN_DAYS, resolveExpiration } from './expiration.js';
import { hashToken, mintToken } from './token.js';
import type { TokenRepo, TokenSummary } from './token-repo.js';
import type { TokenVerifier } from './verifier.js';

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: number;
}

/** A named access key as listed: never its token. */
export interface AccessKey {
  /** The row's id: mlflow-oidc-auth's token routes address a token by it. */
  readonly id: number;
  readonly name: string;
  readonly createdAt: number;
  readonly expiresAt: number;
}

interface TokenHolder {
  readonly id: number;
  readonly username: string;
  readonly isServiceAccount?: boolean;
}

/**
 * Issuing a token replaces the previous one at once: in the store and in every cache, so a rotated
 * service-account token stops working on the next request. A person may also hold named access keys
 * beside their unnamed token (one per laptop, notebook, pipeline), each listed and revoked on its
 * own; a service account never holds more than one token, so any new one, named or not, replaces
 * all it had.
 *
 * The one exception is the bootstrap admin token: a break-glass credential the operator holds in
 * configuration (FLOWGATE_ADMIN_TOKEN / _FILE) and flowgate installs at every start. Like a static
 * token file of an API server, the runtime API neither replaces nor revokes it; only configuration
 * does. Otherwise one admin call would lock the operator out until the next restart.
 *
 * Configuration installs a token, it never revives one: a configured token the store holds as
 * revoked (rotated away, often because it leaked) refuses the start, so a replica or a rollback still
 * holding the old setting cannot make it valid again.
 */
export function createTokenService(deps: {
  sql: Sql;
  repo: TokenRepo;
  verifier: TokenVerifier;
  audit: AuditLog;
  maxDays: number;
  now?: () => number;
  /** The user's tokens changed: the store has ended the sessions a revoked one opened (migration 10); drop them from memory. */
  sessionsEndedOf?: (userId: number) => void;
  /**
   * Inside the minting or revoking transaction: a password imported from MLflow basic-auth retires once
   * its user holds a token, and goes with every other credential when all are revoked. True when there was one.
   */
  retireImportedPassword?: (userId: number) => Promise<boolean>;
}) {
  const now = deps.now ?? Date.now;
  const forgetUser = (userId: number): void => {
    deps.verifier.forgetUser(userId);
    deps.sessionsEndedOf?.(userId);
  };
  /** The token `install` put in place, which the API may not touch (its hash, never the token). */
  let bootstrap: { readonly tokenId: number; readonly userId: number; readonly hash: string } | undefined;

  /**
   * Another flowgate on the store installed a newer configured token, revoking this one's: this
   * flowgate no longer knows which of the admin's tokens configuration owns, and replacing their
   * unnamed tokens here would revoke the current configured one. Refused until it restarts.
   */
  const refuseWhenBootstrapReplaced = async (userId: number): Promise<void> => {
    if (bootstrap?.userId !== userId) return;
    const mine = await deps.repo.findByHash(bootstrap.hash);
    if (mine && mine.revokedAt === null) return;
    throw new FlowgateError(
      'TEMPORARILY_UNAVAILABLE',
      'This flowgate was started with a bootstrap admin token (FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE) that a newer ' +
        'configuration has replaced since: mint the token through a flowgate started with the current setting, or restart this one.',
    );
  };

  /** The user's tokens, less the bootstrap token when it is theirs. */
  const revokeApiTokens = (userId: number, at: number): Promise<number> =>
    bootstrap?.userId === userId
      ? deps.repo.revokeAllOfUserExcept(userId, at, bootstrap.tokenId)
      : deps.repo.revokeAllOfUser(userId, at);

  /** What a new unnamed token replaces: a person's unnamed token, or everything a service account holds. */
  const revokeReplaced = (user: TokenHolder, at: number): Promise<number> =>
    user.isServiceAccount ? revokeApiTokens(user.id, at) : deps.repo.revokeUnnamedOfUser(user.id, at, bootstrap?.userId === user.id ? bootstrap.tokenId : 0);

  return {
    /** The expiry a token gets without one asked for, and the furthest one may be asked, in days. */
    limits: { defaultDays: Math.min(DEFAULT_TOKEN_DAYS, deps.maxDays), maxDays: deps.maxDays },
    /** Validates before writing: a bad expiration changes nothing. */
    async issue(actor: string, user: TokenHolder, expiration: string | undefined): Promise<IssuedToken> {
      const t = now();
      const expiresAt = resolveExpiration(expiration, t, deps.maxDays);
      const token = mintToken();
      await deps.sql.transaction(async () => {
        await refuseWhenBootstrapReplaced(user.id);
        const revoked = await revokeReplaced(user, t);
        const id = await deps.repo.insert(user.id, hashToken(token), t, expiresAt);
        await deps.retireImportedPassword?.(user.id);
        await deps.audit.record({
          actor,
          action: 'token.issue',
          target: `user:${user.username}`,
          oldValue: revoked > 0 ? { revoked_tokens: revoked } : undefined,
          newValue: { token_id: id, expires_at: new Date(expiresAt).toISOString() },
        });
      });
      forgetUser(user.id);
      return { token, expiresAt };
    },
    /**
     * Installs the operator-chosen bootstrap token (refreshing its expiry at each start). A token new
     * to the store is a rotation (a leaked one is the usual reason): every other unnamed token of the
     * user, the previous configured one included, is revoked with it, and the sessions they opened end.
     * Named access keys stay.
     *
     * A token the store holds as revoked is refused (the start fails, nothing changes): a revoked
     * token never becomes valid again by configuration, whoever revoked it. The error names the
     * setting, never the token.
     */
    async install(actor: string, user: { id: number; username: string }, token: string, expiresAt: number): Promise<void> {
      const hash = hashToken(token);
      await deps.sql.transaction(async () => {
        const existing = await deps.repo.findByHash(hash);
        if (existing && existing.userId !== user.id)
          throw new Error('the bootstrap admin token is already held by another user; choose a new one');
        if (existing) {
          if (existing.revokedAt !== null || (await deps.repo.renewUnrevoked(existing.id, expiresAt)) === 0)
            throw revokedBootstrapToken(user.username, existing.revokedAt);
          bootstrap = { tokenId: existing.id, userId: user.id, hash };
        } else {
          const tokenId = await deps.repo.insert(user.id, hash, now(), expiresAt);
          bootstrap = { tokenId, userId: user.id, hash };
          const revoked = await deps.repo.revokeUnnamedOfUser(user.id, now(), tokenId);
          await deps.audit.record({
            actor,
            action: 'token.install',
            target: `user:${user.username}`,
            ...(revoked > 0 ? { oldValue: { revoked_tokens: revoked } } : {}),
          });
        }
      });
      forgetUser(user.id);
    },
    /**
     * A named access key. A name held by a live key is refused (revoke it first); one held by an
     * expired key is taken over. For a service account the key replaces every token it had.
     */
    async issueNamed(actor: string, user: TokenHolder, name: string, expiration: string | undefined): Promise<IssuedToken> {
      const t = now();
      const expiresAt = resolveExpiration(expiration, t, deps.maxDays);
      const token = mintToken();
      await deps.sql.transaction(async () => {
        let revoked = 0;
        if (user.isServiceAccount) revoked = await revokeApiTokens(user.id, t);
        else {
          const holder = await deps.repo.unrevokedNamed(user.id, name);
          if (holder && holder.expiresAt > t)
            throw conflict(`Access key '${name}' of '${user.username}' already exists; revoke it first or choose another name`);
          if (holder) revoked = await deps.repo.revokeNamed(user.id, name, t);
        }
        const id = await deps.repo.insert(user.id, hashToken(token), t, expiresAt, name);
        await deps.retireImportedPassword?.(user.id);
        await deps.audit.record({
          actor,
          action: 'token.issue',
          target: `user:${user.username}`,
          oldValue: revoked > 0 ? { revoked_tokens: revoked } : undefined,
          newValue: { token_id: id, name, expires_at: new Date(expiresAt).toISOString() },
        });
      });
      forgetUser(user.id);
      return { token, expiresAt };
    },
    /** The user's named keys that still work, by name. */
    async listNamed(userId: number): Promise<AccessKey[]> {
      return (await deps.repo.liveNamedOfUser(userId, now())).map((r) => ({ id: Number(r.id), name: r.name!, createdAt: r.createdAt, expiresAt: r.expiresAt }));
    },
    /** Revokes one named key; the user's other keys and unnamed token keep working. */
    async revokeNamed(actor: string, user: TokenHolder, name: string): Promise<void> {
      await deps.sql.transaction(async () => {
        if ((await deps.repo.revokeNamed(user.id, name, now())) === 0) throw notFound(`Access key '${name}' of '${user.username}' does not exist`);
        await deps.audit.record({ actor, action: 'token.revoke', target: `user:${user.username}`, oldValue: { name } });
      });
      forgetUser(user.id);
    },
    /** Each user's token state now (active, expired, revoked, none) and its date, for the service-accounts screen. */
    async states(userIds: readonly number[]): Promise<Map<number, TokenState>> {
      const t = now();
      const found = new Map((await deps.repo.summaries(userIds, t)).map((s) => [s.userId, s]));
      return new Map(userIds.map((id) => [id, tokenStateOf(found.get(id))]));
    },
    /** True for the bootstrap admin: its configured token stays valid beside any token issued to it. */
    holdsBootstrapToken: (userId: number): boolean => bootstrap?.userId === userId,
    /**
     * A repair of the bootstrap admin's record at start: every token it held ends but the configured
     * one, when that is the record's and not revoked (configuration's token is the operator's; the
     * rest may have been someone else's). A revoked configured token stays revoked, and `install`
     * then refuses it.
     */
    async revokeAllButConfigured(actor: string, user: { id: number; username: string }, configuredToken: string): Promise<number> {
      let n = 0;
      await deps.sql.transaction(async () => {
        const configured = await deps.repo.findByHash(hashToken(configuredToken));
        const kept = configured && configured.userId === user.id && configured.revokedAt === null ? configured.id : 0;
        n = await deps.repo.revokeAllOfUserExcept(user.id, now(), kept);
        if (n > 0) await deps.audit.record({ actor, action: 'token.revoke', target: `user:${user.username}`, oldValue: { revoked_tokens: n } });
      });
      forgetUser(user.id);
      return n;
    },
    /** Refused for the bootstrap admin, whose token configuration owns: nothing changes then. */
    async revokeAll(actor: string, user: { id: number; username: string }): Promise<number> {
      if (bootstrap?.userId === user.id)
        throw badRequest(
          `The access token of '${user.username}' is the bootstrap admin token, managed by configuration ` +
            '(FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE): change it there and restart flowgate. ' +
            `Minting a new token for '${user.username}' replaces the ones minted through the API.`,
        );
      let n = 0;
      await deps.sql.transaction(async () => {
        n = await deps.repo.revokeAllOfUser(user.id, now());
        const password = (await deps.retireImportedPassword?.(user.id)) ?? false;
        if (n > 0 || password)
          await deps.audit.record({ actor, action: 'token.revoke', target: `user:${user.username}`, oldValue: { revoked_tokens: n, ...(password ? { imported_password: true } : {}) } });
      });
      forgetUser(user.id);
      return n;
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;

/** The start's refusal of a configured token the store holds as revoked: names the setting and when, never the token. */
function revokedBootstrapToken(username: string, revokedAt: number | string | null): ConfigError {
  const at = revokedAt === null ? NaN : Number(revokedAt);
  const when = Number.isFinite(at) ? ` on ${new Date(at).toISOString()}` : '';
  // A configuration problem found only at start: `flowgate serve` exits 78 (EX_CONFIG), as for any other.
  return new ConfigError([
    `FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE: the configured token of the bootstrap admin '${username}' was revoked${when} ` +
      '(replaced by a newer configured token, or revoked through the admin API), and a revoked token never becomes valid again. ' +
      'This setting is outdated: set it to the current token, or to a new one (at least 32 characters, e.g. `openssl rand -hex 32`), ' +
      'and start flowgate again. Nothing was changed.',
  ]);
}

/**
 * A user's tokens in one word: `active` (one works; `at` the latest expiry), else `expired` (one lapsed
 * unrevoked; `at` when), else `revoked` (every one was revoked; `at` the last revocation), else `none`.
 */
export type TokenState = { readonly state: 'active' | 'expired' | 'revoked'; readonly at: number } | { readonly state: 'none' };

export function tokenStateOf(s: TokenSummary | undefined): TokenState {
  if (s?.activeUntil != null) return { state: 'active', at: s.activeUntil };
  if (s?.lapsedAt != null) return { state: 'expired', at: s.lapsedAt };
  if (s?.revokedAt != null) return { state: 'revoked', at: s.revokedAt };
  return { state: 'none' };
}
