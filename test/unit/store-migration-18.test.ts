import { afterEach, describe, expect, it } from 'vitest';
import { createDirectory, USERS_BY_NAME_IGNORING_CASE } from '../../src/principals/directory.js';
import type { Sql } from '../../src/store/sql.js';
import { freshStore } from '../helpers/test-store.js';

/**
 * Migration 18: a SCIM client asks for each user by name in any case before it creates one
 * (`filter=userName eq "…"`), so that look-up goes through an index on lower(username) instead of
 * reading every user, on the engine the suite runs on (SQLite, or PostgreSQL with FLOWGATE_TEST_STORE=postgres).
 */
let store: { sql: Sql; close: () => Promise<void> } | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

async function planOf(sql: Sql, text: string, params: string[]): Promise<string> {
  if (sql.dialect === 'sqlite') return (await sql.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${text}`, params)).map((r) => r.detail).join('\n');
  return (await sql.all<Record<string, string>>(`EXPLAIN ${text}`, params)).map((r) => r['QUERY PLAN']).join('\n');
}

describe('migration 18: users found by name in any case through an index', () => {
  it('the look-up SCIM filters use reads the index, and finds the one user whatever the case asked', async () => {
    store = await freshStore();
    const { sql } = store;
    await sql.run(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
       INSERT INTO users (username, display_name, is_admin, is_service_account, created_at)
       SELECT 'User' || i || '@Example.com', 'U', 0, 0, 1 FROM n`,
    );
    await sql.run('ANALYZE users');

    const plan = await planOf(sql, USERS_BY_NAME_IGNORING_CASE, ['user777@example.COM']);
    expect(plan).toContain('users_by_lower_username');
    expect(plan).not.toMatch(/SCAN users\b|Seq Scan on users/);

    const directory = createDirectory(sql);
    expect((await directory.usersByNameIgnoringCase('user777@example.COM')).map((u) => u.username)).toEqual(['User777@Example.com']);
    expect(await directory.usersByNameIgnoringCase('user20001@example.com')).toEqual([]);
  });
});
