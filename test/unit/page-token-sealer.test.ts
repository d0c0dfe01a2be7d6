import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createPageTokenSealer } from '../../src/proxy/after/page-token-sealer.js';

const key = () => randomBytes(32);
const binding = (s: string) => Buffer.from(s);
const payload = (s: string) => Buffer.from(s);

/** A token with one base64url character changed into another valid one. */
function flipChar(token: string, at: number): string {
  const c = token[at]!;
  return token.slice(0, at) + (c === 'A' ? 'B' : 'A') + token.slice(at + 1);
}

describe('page token sealer', () => {
  it('opens what it sealed, for the same binding only', () => {
    const sealer = createPageTokenSealer({ current: key(), previous: [] });
    const token = sealer.seal(payload('{"s":3}'), binding('alice|search-1'), 256);
    expect(sealer.open(token, binding('alice|search-1'))?.toString()).toBe('{"s":3}');
    expect(sealer.open(token, binding('bob|search-1'))).toBeUndefined();
    expect(sealer.open(token, binding('alice|search-2'))).toBeUndefined();
  });

  it('is opaque: the payload is not in the token, and sealing twice gives two tokens', () => {
    const sealer = createPageTokenSealer({ current: key(), previous: [] });
    const secret = '{"t":"eyJvZmZzZXQiOiAxMDB9","s":17}';
    const a = sealer.seal(payload(secret), binding('b'), 256);
    const b = sealer.seal(payload(secret), binding('b'), 256);
    expect(a).not.toBe(b);
    for (const t of [a, b]) {
      const bytes = Buffer.from(t.slice(4), 'base64url');
      expect(bytes.includes(Buffer.from('offset'))).toBe(false);
      expect(bytes.includes(Buffer.from('eyJvZmZzZXQ'))).toBe(false);
      expect(t).not.toContain('eyJvZmZzZXQ');
    }
  });

  it('refuses a token with any character changed', () => {
    const sealer = createPageTokenSealer({ current: key(), previous: [] });
    const token = sealer.seal(payload('{"s":1}'), binding('b'), 256);
    for (let at = 4; at < token.length; at += 7) expect(sealer.open(flipChar(token, at), binding('b'))).toBeUndefined();
    expect(sealer.open(flipChar(token, token.length - 1), binding('b'))).toBeUndefined();
  });

  it('refuses a token with a byte flipped, cut short, lengthened or re-spelled', () => {
    const sealer = createPageTokenSealer({ current: key(), previous: [] });
    const token = sealer.seal(payload('{"s":1}'), binding('b'), 256);
    const bytes = Buffer.from(token.slice(4), 'base64url');
    for (const at of [0, 11, 12, 40, bytes.length - 17, bytes.length - 1]) {
      const flipped = Buffer.from(bytes);
      flipped[at]! ^= 0x01;
      expect(sealer.open('fg2.' + flipped.toString('base64url'), binding('b'))).toBeUndefined();
    }
    expect(sealer.open(token.slice(0, -4), binding('b'))).toBeUndefined();
    expect(sealer.open(token + 'AAAA', binding('b'))).toBeUndefined();
    expect(sealer.open(token + '=', binding('b'))).toBeUndefined();
    expect(sealer.open('fg1.' + token.slice(4), binding('b'))).toBeUndefined();
    expect(sealer.open('', binding('b'))).toBeUndefined();
  });

  it('refuses a token sealed under another key', () => {
    const mine = createPageTokenSealer({ current: key(), previous: [] });
    const theirs = createPageTokenSealer({ current: key(), previous: [] });
    expect(mine.open(theirs.seal(payload('x'), binding('b'), 256), binding('b'))).toBeUndefined();
  });

  it('still opens tokens of a previous key after rotation, and seals with the new key only', () => {
    const oldKey = key();
    const newKey = key();
    const before = createPageTokenSealer({ current: oldKey, previous: [] });
    const after = createPageTokenSealer({ current: newKey, previous: [oldKey] });
    const issuedBefore = before.seal(payload('old'), binding('b'), 256);
    expect(after.open(issuedBefore, binding('b'))?.toString()).toBe('old');
    const issuedAfter = after.seal(payload('new'), binding('b'), 256);
    expect(before.open(issuedAfter, binding('b'))).toBeUndefined();
    expect(createPageTokenSealer({ current: newKey, previous: [] }).open(issuedAfter, binding('b'))?.toString()).toBe('new');
    // Once the old key is dropped from the previous keys, its tokens no longer open.
    expect(createPageTokenSealer({ current: newKey, previous: [] }).open(issuedBefore, binding('b'))).toBeUndefined();
  });

  it('has the same length whatever the payload, up to the padded size', () => {
    const sealer = createPageTokenSealer({ current: key(), previous: [] });
    const lengths = new Set(['', 'x', '{"t":null,"s":0,"n":100}', 'y'.repeat(244)].map((p) => sealer.seal(payload(p), binding('b'), 256).length));
    expect(lengths.size).toBe(1);
    // Beyond the padded size the length steps by whole padded sizes.
    const bigger = sealer.seal(payload('y'.repeat(245)), binding('b'), 256);
    expect(bigger.length).toBeGreaterThan([...lengths][0]!);
    expect(sealer.open(bigger, binding('b'))?.toString()).toBe('y'.repeat(245));
  });

  it('refuses a stale token', () => {
    let now = 1_700_000_000_000;
    const sealer = createPageTokenSealer({ current: key(), previous: [] }, { now: () => now, maxAgeMs: 60_000 });
    const token = sealer.seal(payload('x'), binding('b'), 256);
    now += 59_000;
    expect(sealer.open(token, binding('b'))?.toString()).toBe('x');
    now += 2_000;
    expect(sealer.open(token, binding('b'))).toBeUndefined();
  });

  it('refuses keys that are not 32 bytes', () => {
    expect(() => createPageTokenSealer({ current: randomBytes(16), previous: [] })).toThrow();
    expect(() => createPageTokenSealer({ current: key(), previous: [randomBytes(31)] })).toThrow();
  });
});
