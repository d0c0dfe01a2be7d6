import { describe, expect, it } from 'vitest';
import { tokenStateOf } from '../../src/tokens/token-service.js';

/** The service-accounts screen's token state (issue 38): what a user's tokens come to, and its date. */
describe('tokenStateOf', () => {
  it('is active while one works, expired once the last lapsed unrevoked, revoked once every one was revoked, none without any', () => {
    expect(tokenStateOf({ userId: 1, activeUntil: 300, lapsedAt: 300, revokedAt: 100 })).toEqual({ state: 'active', at: 300 });
    expect(tokenStateOf({ userId: 1, activeUntil: null, lapsedAt: 200, revokedAt: 100 })).toEqual({ state: 'expired', at: 200 });
    expect(tokenStateOf({ userId: 1, activeUntil: null, lapsedAt: null, revokedAt: 150 })).toEqual({ state: 'revoked', at: 150 });
    expect(tokenStateOf(undefined)).toEqual({ state: 'none' });
  });
});
