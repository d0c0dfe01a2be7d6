import { Pool as IndexPool } from 'undici';
import { describe, expect, it } from 'vitest';
import { Pool } from '../../src/upstream/undici-pool.js';

describe("undici's pool, loaded by itself", () => {
  it('is the very class the package index exports (an undici upgrade that moves it fails here)', () => {
    expect(Pool).toBe(IndexPool);
    const pool = new Pool('http://127.0.0.1:1');
    expect(pool).toBeInstanceOf(IndexPool);
    return pool.close();
  });
});
