import type { Db } from '../store/database.js';

export interface TokenRecord {
  readonly id: number;
  readonly userId: number;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly revokedAt: number | null;
  /** A named access key's name; null for the user's unnamed token. */
  readonly name?: string | null;
}

interface Row {
  id: number;
  user_id: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  name: string | null;
}
const toRecord = (r: Row): TokenRecord => ({
  id: r.id,
  userId: r.user_id,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  revokedAt: r.revoked_at,
  name: r.name,
});

/** The access_tokens table: only hashes are stored. */
export function createTokenRepo(db: Db) {
  const q = {
    byHash: db.prepare<[string], Row>(
      'SELECT id, user_id, created_at, expires_at, revoked_at, name FROM access_tokens WHERE token_hash = ?',
    ),
    insert: db.prepare('INSERT INTO access_tokens (user_id, token_hash, created_at, expires_at, name) VALUES (?, ?, ?, ?, ?)'),
    reinstate: db.prepare('UPDATE access_tokens SET revoked_at = NULL, expires_at = ? WHERE id = ?'),
    revokeActive: db.prepare('UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL'),
    revokeActiveExcept: db.prepare('UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND id <> ?'),
    revokeUnnamed: db.prepare('UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND name IS NULL AND id <> ?'),
    revokeNamed: db.prepare('UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND name = ?'),
    unrevokedNamed: db.prepare<[number, string], Row>(
      'SELECT id, user_id, created_at, expires_at, revoked_at, name FROM access_tokens WHERE user_id = ? AND revoked_at IS NULL AND name = ?',
    ),
    liveNamedOfUser: db.prepare<[number, number], Row>(
      `SELECT id, user_id, created_at, expires_at, revoked_at, name FROM access_tokens
       WHERE user_id = ? AND name IS NOT NULL AND revoked_at IS NULL AND expires_at > ? ORDER BY name`,
    ),
    activeOfUser: db.prepare<[number, number], Row>(
      `SELECT id, user_id, created_at, expires_at, revoked_at, name FROM access_tokens
       WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY id`,
    ),
    count: db.prepare<[number], { n: number }>(
      'SELECT count(*) AS n FROM access_tokens WHERE revoked_at IS NULL AND expires_at > ?',
    ),
  };
  return {
    findByHash: (hash: string): TokenRecord | undefined => {
      const r = q.byHash.get(hash);
      return r && toRecord(r);
    },
    insert: (userId: number, hash: string, createdAt: number, expiresAt: number, name: string | null = null): number =>
      Number(q.insert.run(userId, hash, createdAt, expiresAt, name).lastInsertRowid),
    reinstate: (id: number, expiresAt: number): void => {
      q.reinstate.run(expiresAt, id);
    },
    revokeAllOfUser: (userId: number, at: number): number => q.revokeActive.run(at, userId).changes,
    /** The same, sparing one token (the bootstrap admin's, which configuration owns). */
    revokeAllOfUserExcept: (userId: number, at: number, keptId: number): number => q.revokeActiveExcept.run(at, userId, keptId).changes,
    /** The user's unnamed tokens, sparing one id (the bootstrap token; 0 spares none). */
    revokeUnnamedOfUser: (userId: number, at: number, keptId = 0): number => q.revokeUnnamed.run(at, userId, keptId).changes,
    revokeNamed: (userId: number, name: string, at: number): number => q.revokeNamed.run(at, userId, name).changes,
    /** The key holding the name, expired or not: a name stays taken until its key is revoked. */
    unrevokedNamed: (userId: number, name: string): TokenRecord | undefined => {
      const r = q.unrevokedNamed.get(userId, name);
      return r && toRecord(r);
    },
    liveNamedOfUser: (userId: number, at: number): TokenRecord[] => q.liveNamedOfUser.all(userId, at).map(toRecord),
    activeOfUser: (userId: number, at: number): TokenRecord[] => q.activeOfUser.all(userId, at).map(toRecord),
    countActive: (at: number): number => q.count.get(at)!.n,
  };
}

export type TokenRepo = ReturnType<typeof createTokenRepo>;
