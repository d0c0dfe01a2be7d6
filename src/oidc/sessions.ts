import { createHash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Sql } from '../store/sql.js';

/** A validated browser session, as the request pipeline needs it. */
export interface LiveSession {
  readonly idHash: string;
  readonly userId: number;
  readonly csrfSecret: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  lastSeenAt: number;
}

/** The access token a sign-in without OIDC proved: the session ends when it is revoked, replaced or expires. */
export interface OpeningToken {
  readonly id: number;
  readonly expiresAt: number;
}

/** A session as listed to its user or an administrator. */
export interface SessionSummary {
  readonly id: number;
  readonly createdAt: number;
  readonly lastSeenAt: number;
  readonly expiresAt: number;
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
  /** A write made without holding up the request (the last-seen time, an expired session's row) failed. */
  readonly onError?: (message: string, err: Error) => void;
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
 * minute (or a tenth of the idle lifetime), so a browsing user costs no SQL on most requests: a
 * cached session is validated synchronously, only a miss returns a Promise.
 */
export function createSessionStore(sql: Sql, options: SessionOptions) {
  const now = options.now ?? Date.now;
  const touchEveryMs = Math.min(60_000, Math.floor(options.idleMs / 10));
  const cache = new LRUCache<string, LiveSession>({
    max: options.cacheSize ?? 10_000,
    ttl: options.cacheTtlMs ?? 30_000,
    // The clock for TTLs must be the injected one, so tests that move time see the same world.
    perf: { now },
  });
  const SQL = {
    insert:
      'INSERT INTO sessions (id_hash, user_id, csrf_secret, created_at, last_seen_at, expires_at, id_token, token_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    byHash: 'SELECT id_hash, user_id, csrf_secret, created_at, last_seen_at, expires_at FROM sessions WHERE id_hash = ?',
    idToken: 'SELECT id_token FROM sessions WHERE id_hash = ?',
    touch: 'UPDATE sessions SET last_seen_at = ? WHERE id_hash = ?',
    delete: 'DELETE FROM sessions WHERE id_hash = ?',
    deleteOfUser: 'DELETE FROM sessions WHERE user_id = ?',
    listOfUser: 'SELECT id, created_at, last_seen_at, expires_at FROM sessions WHERE user_id = ? AND expires_at > ? AND last_seen_at > ? ORDER BY id DESC',
    deleteOneOfUser: 'DELETE FROM sessions WHERE id = ? AND user_id = ? RETURNING id_hash',
    purge: 'DELETE FROM sessions WHERE expires_at <= ? OR last_seen_at <= ?',
  } as const;
  /** Bumped whenever sessions are forgotten: a read that started before must not cache what it read. */
  let forgets = 0;
  const inBackground = (write: Promise<unknown>, what: string) => {
    write.catch((err: Error) => options.onError?.(what, err));
  };

  const expired = (s: LiveSession, t: number) => t >= s.expiresAt || t - s.lastSeenAt >= options.idleMs;

  async function forget(idHash: string): Promise<void> {
    forgets++;
    cache.delete(idHash);
    await sql.run(SQL.delete, [idHash]);
  }

  function forgetCachedOf(userId: number): void {
    forgets++;
    for (const [k, v] of cache.entries()) if (v.userId === userId) cache.delete(k);
  }

  /** Expiry and the last-seen time, for a session found in the cache or the store. */
  function check(s: LiveSession, t: number): LiveSession | undefined {
    if (expired(s, t)) {
      inBackground(forget(s.idHash), 'expired session not deleted');
      return undefined;
    }
    if (t - s.lastSeenAt >= touchEveryMs) {
      s.lastSeenAt = t;
      inBackground(sql.run(SQL.touch, [t, s.idHash]), 'session last-seen time not written');
    }
    return s;
  }

  async function load(idHash: string, t: number): Promise<LiveSession | undefined> {
    const startedAt = forgets;
    const r = await sql.get<Row>(SQL.byHash, [idHash]);
    if (!r) return undefined;
    const s: LiveSession = {
      idHash,
      userId: r.user_id,
      csrfSecret: r.csrf_secret,
      createdAt: r.created_at,
      lastSeenAt: r.last_seen_at,
      expiresAt: r.expires_at,
    };
    if (startedAt === forgets) cache.set(idHash, s);
    return check(s, t);
  }

  return {
    /**
     * `idToken`: the provider's ID token for this login, kept only to be handed back at logout.
     * `token`: the access token that opened it; the store ends the session when the token is revoked
     * (migration 10), and the session never outlives the token's expiry.
     */
    async create(userId: number, opened: { readonly idToken?: string; readonly token?: OpeningToken } = {}): Promise<NewSession> {
      const t = now();
      const id = randomId();
      const session: LiveSession = {
        idHash: sha256(id),
        userId,
        csrfSecret: randomId(),
        createdAt: t,
        lastSeenAt: t,
        expiresAt: Math.min(t + options.absoluteMs, opened.token?.expiresAt ?? Infinity),
      };
      await sql.run(SQL.insert, [session.idHash, userId, session.csrfSecret, t, t, session.expiresAt, opened.idToken ?? null, opened.token?.id ?? null]);
      cache.set(session.idHash, session);
      return { id, session };
    },

    /** The live session for a cookie value, or undefined (unknown, malformed, expired: all alike). */
    validate(id: string): LiveSession | undefined | Promise<LiveSession | undefined> {
      if (!ID_SHAPE.test(id)) return undefined;
      const idHash = sha256(id);
      const t = now();
      const s = cache.get(idHash);
      return s ? check(s, t) : load(idHash, t);
    },

    /** Ends the session; returns its ID token (for the provider's logout), if it had one. */
    async destroy(id: string): Promise<string | undefined> {
      if (!ID_SHAPE.test(id)) return undefined;
      const idHash = sha256(id);
      const idToken = (await sql.get<{ id_token: string | null }>(SQL.idToken, [idHash]))?.id_token ?? undefined;
      await forget(idHash);
      return idToken;
    },

    /** Ends every session of a user (admin action, user deletion); returns how many there were. */
    async destroyAllOf(userId: number): Promise<number> {
      forgetCachedOf(userId);
      const ended = await sql.run(SQL.deleteOfUser, [userId]);
      forgetCachedOf(userId);
      return ended;
    },

    /** A user's live sessions, newest first: the row id addresses one (never its id or hash, which are credentials). */
    async listOf(userId: number): Promise<SessionSummary[]> {
      const t = now();
      const rows = await sql.all<{ id: number; created_at: number; last_seen_at: number; expires_at: number }>(SQL.listOfUser, [userId, t, t - options.idleMs]);
      return rows.map((r) => ({ id: Number(r.id), createdAt: Number(r.created_at), lastSeenAt: Number(r.last_seen_at), expiresAt: Number(r.expires_at) }));
    },

    /** Ends one session of the user by its row id; false when the user has no session with that id. */
    async destroyOneOf(userId: number, id: number): Promise<boolean> {
      const row = await sql.get<{ id_hash: string }>(SQL.deleteOneOfUser, [id, userId]);
      if (!row) return false;
      forgets++;
      cache.delete(row.id_hash);
      return true;
    },

    /** The user's tokens were revoked here: the store ended what they opened, so nothing of theirs may answer from memory. */
    forgetCachedOf,

    purgeExpired(): Promise<number> {
      const t = now();
      return sql.run(SQL.purge, [t, t - options.idleMs]);
    },

    clearCache(): void {
      forgets++;
      cache.clear();
    },

    /** Sessions ended elsewhere (another flowgate on the store), by the SHA-256 of their ids: `'all'` drops every one cached. */
    forgetCached(idHashes: readonly string[] | 'all'): void {
      forgets++;
      if (idHashes === 'all') cache.clear();
      else for (const h of idHashes) cache.delete(h);
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
export function createPendingLogins(sql: Sql, ttlMs: number, now: () => number = Date.now) {
  const SQL = {
    insert: 'INSERT INTO oidc_pending_logins (state_hash, binding_hash, nonce, code_verifier, return_to, expires_at) VALUES (?, ?, ?, ?, ?, ?)',
    take: 'DELETE FROM oidc_pending_logins WHERE state_hash = ? RETURNING binding_hash, nonce, code_verifier, return_to, expires_at',
    purge: 'DELETE FROM oidc_pending_logins WHERE expires_at <= ?',
  } as const;
  return {
    async put(state: string, login: PendingLogin): Promise<void> {
      await sql.run(SQL.insert, [sha256(state), login.bindingHash, login.nonce, login.codeVerifier, login.returnTo, now() + ttlMs]);
    },
    /** Removes and returns the attempt for `state`: a second callback with the same state finds nothing. */
    async take(state: string): Promise<PendingLogin | undefined> {
      const r = await sql.get<{ binding_hash: string; nonce: string; code_verifier: string; return_to: string; expires_at: number }>(SQL.take, [sha256(state)]);
      if (!r || r.expires_at <= now()) return undefined;
      return { nonce: r.nonce, codeVerifier: r.code_verifier, returnTo: r.return_to, bindingHash: r.binding_hash };
    },
    purgeExpired(): Promise<number> {
      return sql.run(SQL.purge, [now()]);
    },
  };
}

export type PendingLogins = ReturnType<typeof createPendingLogins>;
