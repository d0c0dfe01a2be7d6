import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';

// In WAL mode, synchronous = NORMAL leaves the last commits unsynced: an acknowledged revoke could
// come back after a power loss.
it('the SQLite store syncs every commit to disk (WAL with synchronous = FULL)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-sync-'));
  const db = openDatabase(join(dir, 'p.db'));
  try {
    expect(db.prepare('PRAGMA journal_mode').pluck().get()).toBe('wal');
    // 2 is FULL (1 NORMAL, 3 EXTRA).
    expect(db.prepare('PRAGMA synchronous').pluck().get()).toBe(2);
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
