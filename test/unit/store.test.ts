import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openDatabase, SchemaTooNewError } from '../../src/store/database.js';

const tmp = () => join(mkdtempSync(join(tmpdir(), 'fg-store-')), 'p.db');

describe('openDatabase', () => {
  it('applies every migration with WAL, foreign keys and a busy timeout', () => {
    const db = openDatabase(tmp());
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)!.version);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5000);
    db.close();
  });

  it('is idempotent on reopen', () => {
    const path = tmp();
    openDatabase(path).close();
    const db = openDatabase(path);
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)!.version);
    db.close();
  });

  it('refuses a store written by a newer flowgate', () => {
    const path = tmp();
    const raw = new Database(path);
    raw.pragma('user_version = 999');
    raw.close();
    expect(() => openDatabase(path)).toThrow(SchemaTooNewError);
    expect(() => openDatabase(path)).toThrow(/schema version 999, newer than this flowgate knows/);
  });

  it('enforces grant integrity: one grantee, known permission, cascade on user delete', () => {
    const db = openDatabase(tmp());
    db.prepare("INSERT INTO users (username, display_name, created_at) VALUES ('u', 'u', 0)").run();
    const ins = db.prepare('INSERT INTO grants (resource_kind, resource_id, user_id, group_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, 0)');
    expect(() => ins.run('experiment', '1', 1, null, 'WRITE')).toThrow();
    expect(() => ins.run('experiment', '1', null, null, 'READ')).toThrow();
    ins.run('experiment', '1', 1, null, 'READ');
    expect(() => ins.run('experiment', '1', 1, null, 'EDIT')).toThrow(/UNIQUE/);
    db.prepare('DELETE FROM users WHERE id = 1').run();
    expect((db.prepare('SELECT count(*) AS n FROM grants').get() as { n: number }).n).toBe(0);
    db.close();
  });
});

describe('migration 12: kinds and levels from the registry', () => {
  it('keeps every grant and pattern grant, their triggers and indexes, and refuses what the registry does not name', () => {
    const path = tmp();
    openDatabase(path, MIGRATIONS.filter((m) => m.version < 12)).close();
    const old = new Database(path);
    old.prepare("INSERT INTO users (username, display_name, created_at) VALUES ('u', 'u', 0)").run();
    old.prepare("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('prompt', 'p', 1, 'EDIT', 1, 2)").run();
    old.prepare("INSERT INTO pattern_grants (resource_kind, pattern, user_id, permission, created_at, updated_at) VALUES ('experiment', 'team-*', 1, 'READ', 3, 4)").run();
    old.close();

    const db = openDatabase(path);
    expect(db.prepare('SELECT resource_kind, resource_id, user_id, permission, created_at, updated_at FROM grants').all()).toEqual([
      { resource_kind: 'prompt', resource_id: 'p', user_id: 1, permission: 'EDIT', created_at: 1, updated_at: 2 },
    ]);
    expect(db.prepare('SELECT resource_kind, pattern, permission FROM pattern_grants').all()).toEqual([{ resource_kind: 'experiment', pattern: 'team-*', permission: 'READ' }]);
    const generation = () => (db.prepare('SELECT value FROM policy_generation').get() as { value: number }).value;
    const changes = () => (db.prepare('SELECT count(*) AS n FROM grant_changes').get() as { n: number }).n;
    const [g0, c0] = [generation(), changes()];
    db.prepare("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('registered_model', 'm', 1, 'MANAGE', 0, 0)").run();
    db.prepare("INSERT INTO pattern_grants (resource_kind, pattern, user_id, permission, created_at, updated_at) VALUES ('prompt', 'x*', 1, 'READ', 0, 0)").run();
    expect(generation()).toBe(g0 + 2);
    expect(changes()).toBe(c0 + 1);
    const ins = db.prepare('INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES (?, ?, 1, ?, 0, 0)');
    expect(() => ins.run('registered_model', 'm', 'READ')).toThrow(/UNIQUE/);
    expect(() => ins.run('notebook', 'n', 'READ')).toThrow(/FOREIGN KEY/);
    expect(() => ins.run('experiment', '9', 'WRITE')).toThrow(/FOREIGN KEY/);
    db.prepare('DELETE FROM users WHERE id = 1').run();
    expect((db.prepare('SELECT count(*) AS n FROM grants').get() as { n: number }).n).toBe(0);
    expect((db.prepare('SELECT count(*) AS n FROM pattern_grants').get() as { n: number }).n).toBe(0);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
  });
});
