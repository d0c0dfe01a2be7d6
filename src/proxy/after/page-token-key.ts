import { randomBytes } from 'node:crypto';
import type { Sql } from '../../store/sql.js';
import { PAGE_TOKEN_KEY_BYTES } from './page-token-sealer.js';

/**
 * The page-token key kept in the store, made on first use. Every flowgate on the same store reads
 * the same key, so a token one of them issued opens on another; the first to start wins the insert.
 */
export async function storedPageTokenKey(sql: Sql): Promise<Buffer> {
  await sql.run('INSERT INTO page_token_key (id, key, created_at) VALUES (1, ?, ?) ON CONFLICT DO NOTHING', [randomBytes(PAGE_TOKEN_KEY_BYTES), Date.now()]);
  const row = await sql.get<{ key: Buffer }>('SELECT key FROM page_token_key WHERE id = 1');
  return row!.key;
}
