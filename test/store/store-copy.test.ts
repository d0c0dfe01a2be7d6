import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runStoreCopy } from '../../src/commands/store-copy.js';
import { loadConfig } from '../../src/config.js';
import { STORE_TABLES, TABLES_NOT_COPIED } from '../../src/store/copy.js';
import { openSqliteStore } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openStore, redactedUrl } from '../../src/store/store.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

/** How flowgate reaches PostgreSQL with no FLOWGATE_DATABASE_* set (test/store/postgres-tls.test.ts: with a CA). */
const PG = loadConfig({}).postgres;
const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
let server: PostgresServer;
let dir: string;
beforeAll(async () => {
  server = await startPostgres();
  dir = mkdtempSync(join(tmpdir(), 'flowgate-copy-'));
});
afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function sqliteStoreWithData(path: string) {
  const sql = openSqliteStore(path);
  for (let i = 1; i <= 30; i++)
    await sql.run('INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES (?, ?, ?, ?, ?)', [`u${i}`, `User ${i}`, i === 1 ? 1 : 0, i % 7 === 0 ? 1 : 0, 1000 + i]);
  await sql.run('INSERT INTO groups (name, created_at) VALUES (?, ?), (?, ?)', ['team-a', 1, 'team-b', 2]);
  await sql.run('INSERT INTO group_members (group_id, user_id) VALUES (1, 2), (1, 3), (2, 3)');
  for (let i = 0; i < 450; i++)
    await sql.run('INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', ['experiment', String(i), 2 + (i % 20), 'READ', 5, 5]);
  await sql.run("INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at) VALUES ('registered_model', 'm', 1, 'EDIT', 5, 5)");
  await sql.run("INSERT INTO access_tokens (user_id, token_hash, created_at, expires_at, name) VALUES (2, 'h1', 1, 9999999999999, NULL), (3, 'h2', 1, 9999999999999, 'laptop')");
  await sql.run("INSERT INTO audit_log (at, actor, action, target, old_value, new_value) VALUES (1, 'admin', 'grant.create', 'user:u2', NULL, '{\"a\":1}')");
  await sql.run("INSERT INTO sessions (id_hash, user_id, csrf_secret, created_at, last_seen_at, expires_at, id_token) VALUES ('s1', 2, 'c', 1, 1, 9999999999999, NULL)");
  await sql.run('INSERT INTO page_token_key (id, key, created_at) VALUES (1, ?, 1)', [Buffer.alloc(32, 7)]);
  // Pattern grants, one kept in another MLflow workspace (its stored form), workspace membership, a job's starter, an imported password.
  await sql.run("INSERT INTO pattern_grants (resource_kind, pattern, group_id, permission, created_at, updated_at) VALUES ('experiment', 'team-a/*', 1, 'EDIT', 5, 5), ('registered_model', 'ws-a\u001fteam-*', 1, 'READ', 5, 5)");
  await sql.run("INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at) VALUES ('workspace', 'ws-a', 1, 'USE', 5, 5)");
  await sql.run("INSERT INTO job_owners (job_id, user_id, created_at) VALUES ('job-1', 2, 5)");
  await sql.run("INSERT INTO legacy_passwords (user_id, password_hash, source, imported_at) VALUES (3, 'pbkdf2:sha256:1$s$h', 'mlflow-basic-auth', 5)");
  // Disabled users, one by an administrator and one by SCIM: who did it decides whether SCIM may enable them.
  await sql.run("UPDATE users SET disabled_at = 77, disabled_by = 'admin' WHERE id = 4");
  await sql.run("UPDATE users SET disabled_at = 78, disabled_by = 'scim', origin = 'scim' WHERE id = 5");
  return sql;
}

describe('flowgate store copy', () => {
  it('moves a SQLite store into PostgreSQL, verified by counts, and the copy goes on counting ids', async () => {
    const path = join(dir, 'a.db');
    await (await sqliteStoreWithData(path)).close();
    const url = await server.createDatabase();
    const out: string[] = [];
    const err: string[] = [];
    const code = await runStoreCopy(['--from', `sqlite:${path}`, '--to', url, '--json'], (t) => out.push(t), (t) => err.push(t), PG);
    expect(err.join('')).toBe('');
    expect(code).toBe(0);
    const report = JSON.parse(out.join('')) as { verified: boolean; tables: Array<{ table: string; source: number; target: number }> };
    expect(report.verified).toBe(true);
    expect(report.tables.find((t) => t.table === 'grants')).toEqual({ table: 'grants', source: 452, target: 452 });
    for (const [table, n] of [['pattern_grants', 2], ['job_owners', 1], ['legacy_passwords', 1]] as const)
      expect(report.tables.find((t) => t.table === table)).toEqual({ table, source: n, target: n });

    const store = await openStore({ dbPath: '', databaseUrl: url, watchMs: 0 });
    try {
      expect(await store.sql.get('SELECT username, is_admin FROM users WHERE id = 1')).toEqual({ username: 'u1', is_admin: 1 });
      expect(await store.sql.all('SELECT id, disabled_by FROM users WHERE disabled_at IS NOT NULL ORDER BY id')).toEqual([
        { id: 4, disabled_by: 'admin' },
        { id: 5, disabled_by: 'scim' },
      ]);
      const key = await store.sql.get<{ key: Buffer }>('SELECT key FROM page_token_key WHERE id = 1');
      expect(key!.key.equals(Buffer.alloc(32, 7))).toBe(true);
      const next = await store.sql.get<{ id: number }>("INSERT INTO users (username, display_name, created_at) VALUES ('new', 'New', 1) RETURNING id");
      expect(next!.id).toBe(31);
      expect(await store.sql.all('SELECT pattern FROM pattern_grants ORDER BY id')).toEqual([{ pattern: 'team-a/*' }, { pattern: 'ws-a\u001fteam-*' }]);
      const nextPattern = await store.sql.get<{ id: number }>("INSERT INTO pattern_grants (resource_kind, pattern, group_id, permission, created_at, updated_at) VALUES ('prompt', 'p-*', 1, 'READ', 1, 1) RETURNING id");
      expect(nextPattern!.id).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('copies every table of the schema but the ones each store remakes itself', async () => {
    const sql = openSqliteStore(join(dir, 'schema.db'));
    try {
      const tables = (await sql.all<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")).map((t) => t.name);
      expect([...tables].sort()).toEqual([...STORE_TABLES, ...Object.keys(TABLES_NOT_COPIED)].sort());
    } finally {
      await sql.close();
    }
  });

  it('refuses a target that holds data, and writes nothing', async () => {
    const path = join(dir, 'b.db');
    await (await sqliteStoreWithData(path)).close();
    const url = await server.createDatabase();
    const target = await openStore({ dbPath: '', databaseUrl: url, watchMs: 0 });
    await target.sql.run("INSERT INTO groups (name, created_at) VALUES ('already-here', 1)");
    const err: string[] = [];
    const code = await runStoreCopy(['--from', `sqlite:${path}`, '--to', url], () => undefined, (t) => err.push(t), PG);
    expect(code).toBe(1);
    expect(err.join('')).toMatch(/already holds data \(1 rows in groups\)/);
    expect(await target.sql.get('SELECT count(*) AS n FROM users')).toEqual({ n: 0 });
    await target.close();
  });

  it('never prints the password of the PostgreSQL URL', async () => {
    await openSqliteStore(join(dir, 'c.db')).close();
    const err: string[] = [];
    const out: string[] = [];
    const code = await runStoreCopy(
      ['--from', `sqlite:${join(dir, 'c.db')}`, '--to', `postgres://flowgate:s3cret-pw@127.0.0.1:${server.port}/no_such_db`],
      (t) => out.push(t),
      (t) => err.push(t),
      PG,
    );
    expect(code).toBe(1);
    expect(err.join('')).toMatch(/no_such_db/);
    expect(err.join('') + out.join('')).not.toContain('s3cret-pw');
  });

  it('refuses a source SQLite file that does not exist, naming it, and creates nothing', async () => {
    // A mistyped path was opened as a new, empty store: 0 rows copied, "verified", exit 0.
    const typo = join(dir, 'var', 'lib', 'flowgte', 'flowgate.db');
    const target = join(dir, 'from-typo.db');
    const url = await server.createDatabase();
    for (const to of [`sqlite:${target}`, url]) {
      const out: string[] = [];
      const err: string[] = [];
      expect(await runStoreCopy(['--from', `sqlite:${typo}`, '--to', to], (t) => out.push(t), (t) => err.push(t), PG)).toBe(2);
      expect(err.join('')).toContain(`--from names no store: there is no file "${typo}"`);
      expect(out.join('')).toBe('');
    }
    expect(existsSync(typo)).toBe(false);
    expect(existsSync(join(dir, 'var'))).toBe(false);
    expect(existsSync(target)).toBe(false);
  });

  it('leaves an older SQLite source as it was (an older flowgate may still serve from it), and copies it brought up to date', async () => {
    const path = join(dir, 'older.db');
    const older = openSqliteStore(path, MIGRATIONS.slice(0, 12));
    await older.run("INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES ('old-u', 'Old', 0, 0, 1)");
    await older.run("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('experiment', '7', 1, 'READ', 5, 5)");
    const versionOf = () => {
      const db = new Database(path, { readonly: true });
      try {
        return db.pragma('user_version', { simple: true });
      } finally {
        db.close();
      }
    };
    // The older flowgate keeps it open, as one still serving would.
    try {
      const url = await server.createDatabase();
      const out: string[] = [];
      const err: string[] = [];
      // The snapshot's temporary folder, in a TMPDIR of this test's own (this file runs in a process of its own).
      const tmp = join(dir, 'tmp');
      mkdirSync(tmp);
      const before = process.env.TMPDIR;
      process.env.TMPDIR = tmp;
      try {
        expect(await runStoreCopy(['--from', `sqlite:${path}`, '--to', url, '--json'], (t) => out.push(t), (t) => err.push(t), PG), err.join('')).toBe(0);
      } finally {
        if (before === undefined) delete process.env.TMPDIR;
        else process.env.TMPDIR = before;
      }
      expect(readdirSync(tmp)).toEqual([]);
      expect(versionOf()).toBe(12);
      expect(await older.get('SELECT username FROM users WHERE id = 1')).toEqual({ username: 'old-u' });
      const report = JSON.parse(out.join('')) as { verified: boolean; tables: Array<{ table: string; source: number; target: number }> };
      expect(report.verified).toBe(true);
      expect(report.tables.find((t) => t.table === 'grants')).toEqual({ table: 'grants', source: 1, target: 1 });
      const store = await openStore({ dbPath: '', databaseUrl: url, watchMs: 0 });
      try {
        expect(await store.sql.get("SELECT resource_id FROM grants WHERE resource_kind = 'experiment'")).toEqual({ resource_id: '7' });
      } finally {
        await store.close();
      }
    } finally {
      await older.close();
    }
  });

  it('answers a usage error with exit 2', async () => {
    const err: string[] = [];
    expect(await runStoreCopy(['--from', 'sqlite:x'], () => undefined, (t) => err.push(t), PG)).toBe(2);
    expect(err.join('')).toMatch(/--to is required when neither FLOWGATE_DATABASE_URL nor FLOWGATE_DATABASE_URL_FILE is set/);
    err.length = 0;
    expect(await runStoreCopy(['--to', 'postgres://x@127.0.0.1:1/x'], () => undefined, (t) => err.push(t), PG, 'postgres://y@127.0.0.1:1/y')).toBe(2);
    expect(err.join('')).toMatch(/--from is required/);
  });

  it('copies into the configured store when --to is left out: the URL is read from FLOWGATE_DATABASE_URL_FILE, never typed', async () => {
    const path = join(dir, 'to-configured.db');
    await (await sqliteStoreWithData(path)).close();
    const url = await server.createDatabase();
    const urlFile = join(dir, 'database-url');
    writeFileSync(urlFile, `${url}\n`);
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [CLI, 'store', 'copy', '--from', `sqlite:${path}`, '--json'],
        { env: { PATH: process.env.PATH ?? '', FLOWGATE_DATABASE_URL_FILE: urlFile }, timeout: 60_000 },
        (e, stdout, stderr) => resolve({ code: e ? ((e as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      ),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { to: string; verified: boolean };
    expect(report.verified).toBe(true);
    expect(report.to).toBe(redactedUrl(url));
    const target = await openStore({ dbPath: '', databaseUrl: url, watchMs: 0, postgres: PG });
    try {
      expect(await target.sql.get('SELECT count(*) AS n FROM users')).toEqual({ n: 30 });
    } finally {
      await target.close();
    }
  });
});
