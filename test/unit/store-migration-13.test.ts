import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { type MappingChange, watchMappingChanges } from '../../src/store/mapping-changes.js';
import { MIGRATIONS } from '../../src/store/migrations.js';

const tmp = () => join(mkdtempSync(join(tmpdir(), 'fg-mig13-')), 'p.db');
const OLD_CACHES = ['experiment_names', 'model', 'trace', 'dataset', 'review_queue'] as const;

/** A store as schema version 12 left it, with `rows` mapping changes logged and the first `pruned` of them pruned. */
function storeAt12(rows: number, pruned: number): string {
  const path = tmp();
  openDatabase(path, MIGRATIONS.filter((m) => m.version < 13)).close();
  const old = new Database(path);
  expect(old.pragma('user_version', { simple: true })).toBe(12);
  const log = old.prepare('INSERT INTO mapping_changes (cache, key) VALUES (?, ?)');
  for (let i = 1; i <= rows; i++) log.run(OLD_CACHES[i % OLD_CACHES.length], `k${i}`);
  // The gateway value is what version 12 refuses.
  expect(() => log.run('gateway', 'e-1')).toThrow(/CHECK/);
  old.prepare('DELETE FROM mapping_changes WHERE seq <= ?').run(pruned);
  old.close();
  return path;
}

const logged = (db: Database.Database) => db.prepare('SELECT seq, cache, key FROM mapping_changes ORDER BY seq').all();

describe('migration 13: AI-gateway changes in the mapping change log (SQLite)', () => {
  it('keeps every logged row under its seq, goes on numbering after the highest seq ever given, and takes gateway as well as every old value', () => {
    const path = storeAt12(7, 3);
    const before = (() => {
      const db = new Database(path);
      const rows = logged(db);
      db.close();
      return rows;
    })();
    expect(before.map((r) => (r as { seq: number }).seq)).toEqual([4, 5, 6, 7]);

    const db = openDatabase(path);
    expect(db.pragma('user_version', { simple: true })).toBe(MIGRATIONS.at(-1)!.version);
    expect(logged(db)).toEqual(before);
    const log = db.prepare('INSERT INTO mapping_changes (cache, key) VALUES (?, ?)');
    expect(Number(log.run('gateway', 'e-abc').lastInsertRowid)).toBe(8);
    for (const cache of OLD_CACHES) log.run(cache, 'x');
    expect(() => log.run('notebook', 'x')).toThrow(/CHECK/);
    expect(() => log.run('gateway', null)).toThrow(/NOT NULL/);
    expect((db.prepare("SELECT sql FROM sqlite_master WHERE name = 'mapping_changes'").get() as { sql: string }).sql).toMatch(/AUTOINCREMENT/);
    expect(db.prepare("SELECT name FROM sqlite_sequence WHERE name LIKE 'mapping_changes%'").all()).toEqual([{ name: 'mapping_changes' }]);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    db.close();
  });

  it('a log pruned empty still never hands out a seq again', () => {
    const db = openDatabase(storeAt12(5, 5));
    expect(logged(db)).toEqual([]);
    expect(Number(db.prepare("INSERT INTO mapping_changes (cache, key) VALUES ('gateway', 'd-1')").run().lastInsertRowid)).toBe(6);
    db.close();
  });

  it('a store that never logged a change migrates too', () => {
    const db = openDatabase(storeAt12(0, 0));
    expect(Number(db.prepare("INSERT INTO mapping_changes (cache, key) VALUES ('gateway', 's-1')").run().lastInsertRowid)).toBe(1);
    db.close();
  });

  it('a flowgate that follows the log across the migration (another process migrated the file) sees the gateway rows written after it', async () => {
    const path = storeAt12(3, 0);
    const follower = openDatabase(path, MIGRATIONS.filter((m) => m.version < 13));
    const seen: Array<readonly MappingChange[] | 'all'> = [];
    const watch = watchMappingChanges(follower, 10, (changes) => seen.push(changes));
    try {
      const migrated = openDatabase(path);
      migrated.prepare("INSERT INTO mapping_changes (cache, key) VALUES ('gateway', 'e-1')").run();
      migrated.prepare("INSERT INTO mapping_changes (cache, key) VALUES ('model', 'm')").run();
      migrated.close();
      const deadline = Date.now() + 3000;
      while (seen.flat().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(seen).toEqual([[{ cache: 'gateway', key: 'e-1' }, { cache: 'model', key: 'm' }]]);
    } finally {
      watch.stop();
      follower.close();
    }
  });
});
