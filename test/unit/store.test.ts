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
