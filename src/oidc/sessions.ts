import { createHash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Db } from '../store/database.js';

/** A validated browser session, as the request pipeline needs it. */
export interface LiveSession {
  readonly idHash: string;
  readonly userId: number;
  readonly csrfSecret: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  lastSeenAt: number;
}

export interface NewSession {
  /** The opaque id for the cookie: never stored, only its hash. */
  readonly id: string;
  readonly session: LiveSession;
}

export interface SessionOptions {
  readonly idleMs: number;
  readonly absoluteMs: number;
  readonly cacheSize?: number;
  /** How long a validated session is trusted from memory before the store is asked again. */
  readonly cacheTtlMs?: number;
  readonly now?: () => number;
}

interface Row {
  id_hash: string;
  user_id: number;
  csrf_secret: string;
  created_at: number;
  last_seen_at: number;
  expires_at: number;
}

const ID_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export const randomId = (): string => randomBytes(32).toString('base64url');
export const sha256 = (v: string): string => createHash('sha256').update(v).digest('base64url');

/**
 * Server-side sessions: the cookie carries 256 random bits, the store keeps only their SHA-256. A
 * session ends at the earlier of its absolute expiry and `idleMs` after it was last seen. Validation
 * is answered from a small LRU (short TTL), and the last-seen time is written at most once per
 * minute (or a tenth of the idle lifetime), so a browsing user costs no SQL on most requests.
 */
export function createSessionStore(db: Db, options: SessionOptions) {
  const now = options.now ?? Date.now;
  const touchEveryMs = Math.min(60_000, Math.floor(options.idleMs / 10));
  const cache = new LRUCache<string, LiveSession>({
    max: options.cacheSize ?? 10_000,
    ttl: options.cacheTtlMs ?? 30_000,
    // The clock for TTLs must be the injected one, so tests that move time see the same world.
    perf: { now },
  });
  const q = {
    insert: db.prepare(
      'INSERT INTO sessions (id_hash, user_id, csrf_secret, created_at, last_seen_at, expires_at, id_token) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ),
    byHash: db.prepare<[string], Row>(
      'SELECT id_hash, user_id, csrf_secret, created_at, last_seen_at, expires_at FROM sessions WHERE id_hash = ?',
    ),
    idToken: db.prepare<[string], { id_token: string | null }>('SELECT id_token FROM sessions WHERE id_hash = ?'),
    touch: db.prepare('UPDATE sessions SET last_seen_at = ? WHERE id_hash = ?'),
    delete: db.prepare('DELETE FROM sessions WHERE id_hash = ?'),
    deleteOfUser: db.prepare('DELETE FROM sessions WHERE user_id = ?'),
    purge: db.prepare('DELETE FROM sessions WHERE expires_at <= ? OR last_seen_at <= ?'),
  };

  const expired = (s: LiveSession, t: number) => t >= s.expiresAt || t - s.lastSeenAt >= options.idleMs;

  function forget(idHash: string): void {
    cache.delete(idHash);
    q.delete.run(idHash);
  }

  return {
    /** `idToken`: the provider's ID token for this login, kept only to be handed back at logout. */
    create(userId: number, idToken?: string): NewSession {
      const t = now();
      const id = randomId();
      const session: LiveSession = {
        idHash: sha256(id),
        userId,
        csrfSecret: randomId(),
        createdAt: t,
        lastSeenAt: t,
        expiresAt: t + options.absoluteMs,
      };
      q.insert.run(session.idHash, userId, session.csrfSecret, t, t, session.expiresAt, idToken ?? null);
      cache.set(session.idHash, session);
      return { id, session };
    },

    /** The live session for a cookie value, or undefined (unknown, malformed, expired: all alike). */
    validate(id: string): LiveSession | undefined {
      if (!ID_SHAPE.test(id)) return undefined;
      const idHash = sha256(id);
      const t = now();
      let s = cache.get(idHash);
      if (!s) {
        const r = q.byHash.get(idHash);
        if (!r) return undefined;
        s = {
          idHash,
          userId: r.user_id,
          csrfSecret: r.csrf_secret,
          createdAt: r.created_at,
          lastSeenAt: r.last_seen_at,
          expiresAt: r.expires_at,
        };
        cache.set(idHash, s);
      }
      if (expired(s, t)) {
        forget(idHash);
        return undefined;
      }
      if (t - s.lastSeenAt >= touchEveryMs) {
        s.lastSeenAt = t;
        q.touch.run(t, idHash);
      }
      return s;
    },

    /** Ends the session; returns its ID token (for the provider's logout), if it had one. */
    destroy(id: string): string | undefined {
      if (!ID_SHAPE.test(id)) return undefined;
      const idHash = sha256(id);
      const idToken = q.idToken.get(idHash)?.id_token ?? undefined;
      forget(idHash);
      return idToken;
    },

    /** Ends every session of a user (admin action, user deletion); returns how many there were. */
    destroyAllOf(userId: number): number {
      for (const [k, v] of cache.entries()) if (v.userId === userId) cache.delete(k);
      return q.deleteOfUser.run(userId).changes;
    },

    purgeExpired(): number {
      const t = now();
      return q.purge.run(t, t - options.idleMs).changes;
    },

    clearCache(): void {
      cache.clear();
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;

export interface PendingLogin {
  readonly nonce: string;
  readonly codeVerifier: string;
  readonly returnTo: string;
  readonly bindingHash: string;
}

/** Login attempts between the redirect to the provider and the callback: used once, short-lived. */
export function createPendingLogins(db: Db, ttlMs: number, now: () => number = Date.now) {
  const q = {
    insert: db.prepare(
      'INSERT INTO oidc_pending_logins (state_hash, binding_hash, nonce, code_verifier, return_to, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    take: db.prepare<[string], { binding_hash: string; nonce: string; code_verifier: string; return_to: string; expires_at: number }>(
      'DELETE FROM oidc_pending_logins WHERE state_hash = ? RETURNING binding_hash, nonce, code_verifier, return_to, expires_at',
    ),
    purge: db.prepare('DELETE FROM oidc_pending_logins WHERE expires_at <= ?'),
  };
  return {
    put(state: string, login: PendingLogin): void {
      q.insert.run(sha256(state), login.bindingHash, login.nonce, login.codeVerifier, login.returnTo, now() + ttlMs);
    },
    /** Removes and returns the attempt for `state`: a second callback with the same state finds nothing. */
    take(state: string): PendingLogin | undefined {
      const r = q.take.get(sha256(state));
      if (!r || r.expires_at <= now()) return undefined;
      return { nonce: r.nonce, codeVerifier: r.code_verifier, returnTo: r.return_to, bindingHash: r.binding_hash };
    },
    purgeExpired(): number {
      return q.purge.run(now()).changes;
    },
  };
}

export type PendingLogins = ReturnType<typeof createPendingLogins>;
