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
  // Never touches revoked_at: a revoked token stays revoked, whatever configuration says.
  renewUnrevoked: 'UPDATE access_tokens SET expires_at = ? WHERE id = ? AND revoked_at IS NULL',
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

/** What a user's tokens come to at `at` (see `tokenStateOf`): one row per user holding any. */
export interface TokenSummary {
  readonly userId: number;
  /** The latest expiry among tokens still working; null when none works. */
  readonly activeUntil: number | null;
  /** The latest expiry among tokens never revoked (those that lapsed); null when every one was revoked. */
  readonly lapsedAt: number | null;
  /** When the last revocation happened; null when none was revoked. */
  readonly revokedAt: number | null;
}

interface SummaryRow {
  user_id: number;
  active_until: number | null;
  lapsed_at: number | null;
  revoked_at: number | null;
}

/** One statement for a page of users (`ids` placeholders), both engines. */
const summarySql = (ids: number) => `SELECT user_id,
         max(CASE WHEN revoked_at IS NULL AND expires_at > ? THEN expires_at END) AS active_until,
         max(CASE WHEN revoked_at IS NULL THEN expires_at END) AS lapsed_at,
         max(revoked_at) AS revoked_at
       FROM access_tokens WHERE user_id IN (${Array.from({ length: ids }, () => '?').join(', ')}) GROUP BY user_id`;

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
    /** A new expiry for a token not revoked; 0 when it was revoked (nothing changes then). */
    renewUnrevoked: (id: number, expiresAt: number): Promise<number> => sql.run(SQL.renewUnrevoked, [expiresAt, id]),
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
    /** What the tokens of each of these users come to at `at`; users holding none are left out. */
    summaries: async (userIds: readonly number[], at: number): Promise<TokenSummary[]> => {
      if (userIds.length === 0) return [];
      const rows = await sql.all<SummaryRow>(summarySql(userIds.length), [at, ...userIds]);
      const n = (v: number | string | null) => (v === null ? null : Number(v));
      return rows.map((r) => ({ userId: Number(r.user_id), activeUntil: n(r.active_until), lapsedAt: n(r.lapsed_at), revokedAt: n(r.revoked_at) }));
    },
  };
}

export type TokenRepo = ReturnType<typeof createTokenRepo>;
