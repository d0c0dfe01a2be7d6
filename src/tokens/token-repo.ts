import type { Sql } from '../store/sql.js';

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

const COLUMNS = 'id, user_id, created_at, expires_at, revoked_at, name';

const SQL = {
  byHash: `SELECT ${COLUMNS} FROM access_tokens WHERE token_hash = ?`,
  insert: 'INSERT INTO access_tokens (user_id, token_hash, created_at, expires_at, name) VALUES (?, ?, ?, ?, ?) RETURNING id',
  reinstate: 'UPDATE access_tokens SET revoked_at = NULL, expires_at = ? WHERE id = ?',
  revokeActive: 'UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL',
  revokeActiveExcept: 'UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND id <> ?',
  revokeUnnamed: 'UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND name IS NULL AND id <> ?',
  revokeNamed: 'UPDATE access_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL AND name = ?',
  unrevokedNamed: `SELECT ${COLUMNS} FROM access_tokens WHERE user_id = ? AND revoked_at IS NULL AND name = ?`,
  liveNamedOfUser: `SELECT ${COLUMNS} FROM access_tokens
       WHERE user_id = ? AND name IS NOT NULL AND revoked_at IS NULL AND expires_at > ? ORDER BY name`,
  activeOfUser: `SELECT ${COLUMNS} FROM access_tokens
       WHERE user_id = ? AND revoked_at IS NULL AND expires_at > ? ORDER BY id`,
  count: 'SELECT count(*) AS n FROM access_tokens WHERE revoked_at IS NULL AND expires_at > ?',
} as const;

/** The access_tokens table: only hashes are stored. */
export function createTokenRepo(sql: Sql) {
  const one = async (text: string, params: readonly (string | number)[]): Promise<TokenRecord | undefined> => {
    const r = await sql.get<Row>(text, params);
    return r && toRecord(r);
  };
  const many = async (text: string, params: readonly (string | number)[]): Promise<TokenRecord[]> => (await sql.all<Row>(text, params)).map(toRecord);
  return {
    findByHash: (hash: string): Promise<TokenRecord | undefined> => one(SQL.byHash, [hash]),
    insert: async (userId: number, hash: string, createdAt: number, expiresAt: number, name: string | null = null): Promise<number> =>
      (await sql.get<{ id: number }>(SQL.insert, [userId, hash, createdAt, expiresAt, name]))!.id,
    reinstate: async (id: number, expiresAt: number): Promise<void> => {
      await sql.run(SQL.reinstate, [expiresAt, id]);
    },
    revokeAllOfUser: (userId: number, at: number): Promise<number> => sql.run(SQL.revokeActive, [at, userId]),
    /** The same, sparing one token (the bootstrap admin's, which configuration owns). */
    revokeAllOfUserExcept: (userId: number, at: number, keptId: number): Promise<number> => sql.run(SQL.revokeActiveExcept, [at, userId, keptId]),
    /** The user's unnamed tokens, sparing one id (the bootstrap token; 0 spares none). */
    revokeUnnamedOfUser: (userId: number, at: number, keptId = 0): Promise<number> => sql.run(SQL.revokeUnnamed, [at, userId, keptId]),
    revokeNamed: (userId: number, name: string, at: number): Promise<number> => sql.run(SQL.revokeNamed, [at, userId, name]),
    /** The key holding the name, expired or not: a name stays taken until its key is revoked. */
    unrevokedNamed: (userId: number, name: string): Promise<TokenRecord | undefined> => one(SQL.unrevokedNamed, [userId, name]),
    liveNamedOfUser: (userId: number, at: number): Promise<TokenRecord[]> => many(SQL.liveNamedOfUser, [userId, at]),
    activeOfUser: (userId: number, at: number): Promise<TokenRecord[]> => many(SQL.activeOfUser, [userId, at]),
    countActive: async (at: number): Promise<number> => (await sql.get<{ n: number }>(SQL.count, [at]))!.n,
  };
}

export type TokenRepo = ReturnType<typeof createTokenRepo>;
