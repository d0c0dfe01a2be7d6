import { randomBytes } from 'node:crypto';
import type { Db } from '../../store/database.js';
import { PAGE_TOKEN_KEY_BYTES } from './page-token-sealer.js';

/**
 * The page-token key kept in the store, made on first use. Every flowgate on the same store reads
 * the same key, so a token one of them issued opens on another; the first to start wins the insert.
 */
export function storedPageTokenKey(db: Db): Buffer {
  db.prepare('INSERT OR IGNORE INTO page_token_key (id, key, created_at) VALUES (1, ?, ?)').run(randomBytes(PAGE_TOKEN_KEY_BYTES), Date.now());
  const row = db.prepare('SELECT key FROM page_token_key WHERE id = 1').get() as { key: Buffer };
  return row.key;
}
