import { describe, expect, it } from 'vitest';
import { storableDisplayName } from '../../src/principals/display-name.js';

describe('a display name from an identity provider, a token, SCIM or an import', () => {
  it('loses its control characters and is cut to 256 characters', () => {
    expect(storableDisplayName('Ann\u0000 Lee\u001b[0m\r\n\u007f', 'ann')).toBe('Ann Lee[0m');
    expect(storableDisplayName('é'.repeat(300), 'x')).toBe('é'.repeat(256));
    expect(storableDisplayName('Ann Lee', 'ann')).toBe('Ann Lee');
  });

  it('is the fallback when nothing printable is given', () => {
    expect(storableDisplayName(undefined, 'ann')).toBe('ann');
    expect(storableDisplayName('\u0000\u0001', 'ann')).toBe('ann');
    expect(storableDisplayName('', '')).toBe('');
  });
});
