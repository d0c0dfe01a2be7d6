import { describe, expect, it, vi } from 'vitest';
import { hashToken, mintToken } from '../../src/tokens/token.js';
import type { TokenRecord, TokenRepo } from '../../src/tokens/token-repo.js';
import { createTokenVerifier, MALFORMED } from '../../src/tokens/verifier.js';
import { resolveExpiration } from '../../src/tokens/expiration.js';

/** What a client sends after `Basic `. */
const credentials = (username: string, token: string) => Buffer.from(`${username}:${token}`).toString('base64');

function fakeRepo(records: Map<string, TokenRecord>) {
  const findByHash = vi.fn((h: string) => records.get(h));
  return { repo: { findByHash } as unknown as TokenRepo, findByHash };
}

describe('tokens', () => {
  it('are 256 random bits, distinct each time', () => {
    const seen = new Set(Array.from({ length: 1000 }, mintToken));
    expect(seen.size).toBe(1000);
    for (const t of [...seen].slice(0, 10)) expect(Buffer.from(t.slice(4), 'base64url')).toHaveLength(32);
  });

  it('verification hits the store once, then only the cache, answered without a promise', async () => {
    const token = mintToken();
    const { repo, findByHash } = fakeRepo(new Map([[hashToken(token), { id: 1, userId: 9, createdAt: 0, expiresAt: Date.now() + 60_000, revokedAt: null }]]));
    const v = createTokenVerifier({ repo, usernameOf: () => 'alice', cacheSize: 10 });
    expect(await v.verifyEncoded(credentials('alice', token))).toMatchObject({ tokenId: 1, userId: 9, username: 'alice' });
    for (let i = 0; i < 100; i++) {
      const hit = v.verifyEncoded(credentials('alice', token));
      expect(hit).not.toBeInstanceOf(Promise);
      expect(hit).toMatchObject({ tokenId: 1, userId: 9, username: 'alice' });
    }
    expect(findByHash).toHaveBeenCalledTimes(1);
  });

  it('rejects the wrong username, an expired token, a revoked token; forgetUser drops cache entries', async () => {
    const token = mintToken();
    let now = 1000;
    const records = new Map([[hashToken(token), { id: 1, userId: 9, createdAt: 0, expiresAt: 2000, revokedAt: null as number | null }]]);
    const { repo } = fakeRepo(records);
    const v = createTokenVerifier({ repo, usernameOf: () => 'alice', cacheSize: 10, now: () => now });
    expect(await v.verifyEncoded(credentials('bob', token))).toBeUndefined();
    expect(await v.verifyEncoded(credentials('alice', token))).toBeDefined();
    records.set(hashToken(token), { ...records.get(hashToken(token))!, revokedAt: 1500 });
    expect(await v.verifyEncoded(credentials('alice', token))).toBeDefined(); // still cached until told
    v.forgetUser(9);
    expect(await v.verifyEncoded(credentials('alice', token))).toBeUndefined();
    records.set(hashToken(token), { ...records.get(hashToken(token))!, revokedAt: null });
    now = 2000;
    expect(await v.verifyEncoded(credentials('alice', token))).toBeUndefined();
  });

  it('credentials as sent: a hit needs the exact string that verified in full; a wrong or malformed one never is cached', async () => {
    const token = mintToken();
    const { repo, findByHash } = fakeRepo(new Map([[hashToken(token), { id: 1, userId: 9, createdAt: 0, expiresAt: Date.now() + 60_000, revokedAt: null }]]));
    const v = createTokenVerifier({ repo, usernameOf: () => 'alice', cacheSize: 10 });
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    expect(await v.verifyEncoded(b64(`alice:${token}`))).toMatchObject({ tokenId: 1, userId: 9, username: 'alice' });
    expect(await v.verifyEncoded(b64(`alice:${token}`))).toMatchObject({ userId: 9 });
    expect(findByHash).toHaveBeenCalledTimes(1);
    // A valid token under another name: looked up each time, refused each time.
    expect(await v.verifyEncoded(b64(`mallory:${token}`))).toBeUndefined();
    expect(await v.verifyEncoded(b64(`mallory:${token}`))).toBeUndefined();
    expect(findByHash).toHaveBeenCalledTimes(3);
    expect(await v.verifyEncoded(b64(`alice:${token}x`))).toBeUndefined();
    expect(await v.verifyEncoded(b64('no-colon'))).toBe(MALFORMED);
    expect(await v.verifyEncoded(b64(`:${token}`))).toBe(MALFORMED);
    expect(v.size).toBe(1);
    // Other spellings of the same credential (stray characters the decoder skips) verify, but are not remembered.
    const lookups = findByHash.mock.calls.length;
    for (const spelling of [`${b64(`alice:${token}`)}!`, `*${b64(`alice:${token}`)}`, b64(`alice:${token}`).replace(/=+$/, '')])
      expect(await v.verifyEncoded(spelling)).toMatchObject({ userId: 9 });
    expect(findByHash.mock.calls.length).toBe(lookups + 3);
    expect(v.size).toBe(1);
  });

  it('bounds the cache', async () => {
    const records = new Map<string, TokenRecord>();
    const tokens = Array.from({ length: 50 }, (_, i) => {
      const t = mintToken();
      records.set(hashToken(t), { id: i, userId: i, createdAt: 0, expiresAt: Date.now() + 60_000, revokedAt: null });
      return t;
    });
    const v = createTokenVerifier({ repo: fakeRepo(records).repo, usernameOf: (id) => `u${id}`, cacheSize: 16 });
    for (const [i, t] of tokens.entries()) await v.verifyEncoded(credentials(`u${i}`, t));
    expect(v.size).toBe(16);
  });

  it('expirations: default, future only, bounded', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(resolveExpiration(undefined, now, 366)).toBe(now + 90 * 86_400_000);
    expect(resolveExpiration(undefined, now, 30)).toBe(now + 30 * 86_400_000);
    expect(resolveExpiration('2026-06-01T00:00:00Z', now, 366)).toBe(Date.parse('2026-06-01T00:00:00Z'));
    expect(() => resolveExpiration('2025-12-31T00:00:00Z', now, 366)).toThrow(/future/);
    expect(() => resolveExpiration('2027-06-01T00:00:00Z', now, 366)).toThrow(/366 days/);
  });
});
