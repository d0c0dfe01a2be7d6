import { createHash } from 'node:crypto';
import { beforeEach, describe, expect, it, vi } from 'vitest';

// Instrument the real timingSafeEqual so the test sees every comparison the check makes.
const compared = vi.hoisted(() => [] as Array<{ a: Buffer; b: Buffer; equal: boolean }>);
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return {
    ...real,
    timingSafeEqual: (a: NodeJS.ArrayBufferView, b: NodeJS.ArrayBufferView) => {
      const equal = real.timingSafeEqual(a, b);
      compared.push({ a: Buffer.from(a as Buffer), b: Buffer.from(b as Buffer), equal });
      return equal;
    },
  };
});

const { checkApiKey, digestKey } = await import('../../src/inference/api-key.js');
const { parseKeyFile } = await import('../../src/inference/key-file.js');

const sha = (s: string) => createHash('sha256').update(s).digest();

const KEYS = parseKeyFile(
  `
keys:
  - id: everywhere
    value: key-everywhere-0123456789
  - id: iris-only
    value: key-iris-only-0123456789
    routes: [iris]
  - id: fraud-model-only
    value: key-fraud-model-0123456789
    models: [fraud]
  - id: hashed
    sha256: ${sha('key-hashed-0123456789').toString('hex')}
`,
  'keys.yaml',
);

const headers = (...pairs: string[]) => pairs;
const target = { route: 'iris', model: 'iris' };

describe('x-api-key check', () => {
  beforeEach(() => {
    compared.length = 0;
  });

  it.each([
    ['no header', headers('Content-Type', 'application/json'), target, { ok: false, reason: 'missing_key' }],
    ['empty header', headers('x-api-key', ''), target, { ok: false, reason: 'empty_key' }],
    ['blank header', headers('X-Api-Key', '   '), target, { ok: false, reason: 'empty_key' }],
    ['repeated header, both valid', headers('x-api-key', 'key-everywhere-0123456789', 'X-API-KEY', 'key-everywhere-0123456789'), target, { ok: false, reason: 'repeated_key' }],
    ['wrong key', headers('x-api-key', 'key-everywhere-0123456788'), target, { ok: false, reason: 'wrong_key' }],
    ['prefix of a valid key', headers('x-api-key', 'key-everywhere'), target, { ok: false, reason: 'wrong_key' }],
    ['valid key plus suffix', headers('x-api-key', 'key-everywhere-0123456789x'), target, { ok: false, reason: 'wrong_key' }],
    ['right key', headers('x-api-key', 'key-everywhere-0123456789'), target, { ok: true, keyId: 'everywhere' }],
    ['right key, any header case', headers('X-API-Key', 'key-everywhere-0123456789'), target, { ok: true, keyId: 'everywhere' }],
    ['key stored as sha256', headers('x-api-key', 'key-hashed-0123456789'), target, { ok: true, keyId: 'hashed' }],
    ['route-limited key on its route', headers('x-api-key', 'key-iris-only-0123456789'), target, { ok: true, keyId: 'iris-only' }],
    ['route-limited key on another route', headers('x-api-key', 'key-iris-only-0123456789'), { route: 'fraud', model: 'fraud' }, { ok: false, reason: 'key_out_of_scope', keyId: 'iris-only' }],
    ['model-limited key on its model', headers('x-api-key', 'key-fraud-model-0123456789'), { route: 'iris', model: 'fraud' }, { ok: true, keyId: 'fraud-model-only' }],
    ['model-limited key on another model', headers('x-api-key', 'key-fraud-model-0123456789'), target, { ok: false, reason: 'key_out_of_scope', keyId: 'fraud-model-only' }],
    ['model-limited key where no model is known', headers('x-api-key', 'key-fraud-model-0123456789'), { route: 'iris', model: undefined }, { ok: false, reason: 'key_out_of_scope', keyId: 'fraud-model-only' }],
  ])('%s', (_label, raw, t, expected) => {
    expect(checkApiKey(raw, KEYS, t)).toEqual(expected);
  });

  it('rejects everything when no key is configured', () => {
    expect(checkApiKey(headers('x-api-key', 'key-everywhere-0123456789'), [], target)).toEqual({ ok: false, reason: 'wrong_key' });
  });

  it('compares against every valid key in full, wherever the mismatch is, over fixed-length digests', () => {
    const presented = [
      'key-everywhere-0123456789', // matches the first key
      'key-hashed-0123456789', // matches the last key
      'Xey-everywhere-0123456789', // differs in the first byte
      'key-everywhere-012345678X', // differs in the last byte
      'k', // one byte
      'x'.repeat(1000), // much longer than any key
    ];
    for (const value of presented) {
      compared.length = 0;
      checkApiKey(headers('x-api-key', value), KEYS, target);
      // one comparison per valid key, in order: no early exit on a match or on a miss
      expect(compared).toHaveLength(KEYS.length);
      compared.forEach((c, i) => {
        expect(c.a.length).toBe(32);
        expect(c.b.length).toBe(32);
        expect(c.a.equals(sha(value))).toBe(true);
        expect(c.b.equals(KEYS[i]!.digest)).toBe(true);
      });
    }
  });

  it('never compares the presented value itself, only its digest', () => {
    checkApiKey(headers('x-api-key', 'key-everywhere-0123456789'), KEYS, target);
    for (const c of compared) expect(c.a.toString('latin1')).not.toContain('key-everywhere');
    expect(digestKey('key-everywhere-0123456789').equals(sha('key-everywhere-0123456789'))).toBe(true);
  });
});
