import type { AuditLog } from '../audit/audit-log.js';
import type { Db } from '../store/database.js';
import { resolveExpiration } from './expiration.js';
import { hashToken, mintToken } from './token.js';
import type { TokenRepo } from './token-repo.js';
import type { TokenVerifier } from './verifier.js';

export interface IssuedToken {
  readonly token: string;
  readonly expiresAt: number;
}

/**
 * Issuing a token replaces the user's previous ones at once: in the store and in every cache, so a
 * rotated service-account token stops working on the next request.
 */
export function createTokenService(deps: {
  db: Db;
  repo: TokenRepo;
  verifier: TokenVerifier;
  audit: AuditLog;
  maxDays: number;
  now?: () => number;
}) {
  const now = deps.now ?? Date.now;
  return {
    /** Validates before writing: a bad expiration changes nothing. */
    issue(actor: string, user: { id: number; username: string }, expiration: string | undefined): IssuedToken {
      const t = now();
      const expiresAt = resolveExpiration(expiration, t, deps.maxDays);
      const token = mintToken();
      deps.db.transaction(() => {
        const revoked = deps.repo.revokeAllOfUser(user.id, t);
        const id = deps.repo.insert(user.id, hashToken(token), t, expiresAt);
        deps.audit.record({
          actor,
          action: 'token.issue',
          target: `user:${user.username}`,
          oldValue: revoked > 0 ? { revoked_tokens: revoked } : undefined,
          newValue: { token_id: id, expires_at: new Date(expiresAt).toISOString() },
        });
      })();
      deps.verifier.forgetUser(user.id);
      return { token, expiresAt };
    },
    /**
     * Installs the operator-chosen bootstrap token (refreshing its expiry at each start); the user's
     * other tokens stay valid.
     */
    install(actor: string, user: { id: number; username: string }, token: string, expiresAt: number): void {
      const hash = hashToken(token);
      deps.db.transaction(() => {
        const existing = deps.repo.findByHash(hash);
        if (existing && existing.userId !== user.id)
          throw new Error('the bootstrap admin token is already held by another user; choose a new one');
        if (existing) deps.repo.reinstate(existing.id, expiresAt);
        else {
          deps.repo.insert(user.id, hash, now(), expiresAt);
          deps.audit.record({ actor, action: 'token.install', target: `user:${user.username}` });
        }
      })();
      deps.verifier.forgetUser(user.id);
    },
    revokeAll(actor: string, user: { id: number; username: string }): number {
      let n = 0;
      deps.db.transaction(() => {
        n = deps.repo.revokeAllOfUser(user.id, now());
        if (n > 0) deps.audit.record({ actor, action: 'token.revoke', target: `user:${user.username}`, oldValue: { revoked_tokens: n } });
      })();
      deps.verifier.forgetUser(user.id);
      return n;
    },
  };
}

export type TokenService = ReturnType<typeof createTokenService>;
