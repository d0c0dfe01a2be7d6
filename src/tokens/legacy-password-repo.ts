import type { Sql } from '../store/sql.js';

export interface LegacyPasswordRow {
  readonly user_id: number;
  readonly username: string;
  readonly password_hash: string;
}

const SQL = {
  // A token minted since the import retires the password: checked here too, so a token minted by
  // another flowgate on the store retires it at once, before that one's delete is seen. A disabled
  // user, or one who signs in through the identity provider, has no password (the disable and the
  // link delete it too; this holds meanwhile, and for rows written before they did).
  live: `SELECT u.id AS user_id, u.username, lp.password_hash FROM legacy_passwords lp JOIN users u ON u.id = lp.user_id
          WHERE u.username = ? AND u.sign_in = 'local' AND u.disabled_at IS NULL AND NOT EXISTS (SELECT 1 FROM access_tokens t WHERE t.user_id = lp.user_id AND t.created_at >= lp.imported_at)`,
  hashOf: 'SELECT password_hash FROM legacy_passwords WHERE user_id = ?',
  insert: 'INSERT INTO legacy_passwords (user_id, password_hash, source, imported_at) VALUES (?, ?, ?, ?)',
  update: 'UPDATE legacy_passwords SET password_hash = ?, source = ?, imported_at = ? WHERE user_id = ?',
  remove: 'DELETE FROM legacy_passwords WHERE user_id = ?',
  hasTokens: 'SELECT 1 AS one FROM access_tokens WHERE user_id = ? LIMIT 1',
  count: 'SELECT count(*) AS n FROM legacy_passwords',
} as const;

/** The legacy_passwords table (migration 15): werkzeug hashes imported from MLflow basic-auth. */
export function createLegacyPasswordRepo(sql: Sql, now: () => number = Date.now) {
  return {
    /** The user's imported hash, unless a token minted since retired it. */
    live: (username: string): Promise<LegacyPasswordRow | undefined> => sql.get<LegacyPasswordRow>(SQL.live, [username]),
    hashOf: async (userId: number): Promise<string | undefined> => (await sql.get<{ password_hash: string }>(SQL.hashOf, [userId]))?.password_hash,
    async set(userId: number, hash: string, source: string): Promise<void> {
      if ((await sql.run(SQL.update, [hash, source, now(), userId])) === 0) await sql.run(SQL.insert, [userId, hash, source, now()]);
    },
    remove: async (userId: number): Promise<boolean> => (await sql.run(SQL.remove, [userId])) > 0,
    hasTokens: async (userId: number): Promise<boolean> => (await sql.get(SQL.hasTokens, [userId])) !== undefined,
    count: async (): Promise<number> => (await sql.get<{ n: number }>(SQL.count))!.n,
  };
}

export type LegacyPasswordRepo = ReturnType<typeof createLegacyPasswordRepo>;
