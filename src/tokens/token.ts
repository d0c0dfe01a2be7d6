import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 32 random bytes = 256 bits from the CSPRNG; the prefix lets secret scanners spot a leaked token. */
export const TOKEN_PREFIX = 'fgt_';

export function mintToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * A token carries 256 bits of entropy, so one fast SHA-256 is as strong as a slow KDF here and
 * keeps verification cheap; slow hashes protect low-entropy passwords, which these are not.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** Equality whose time does not depend on where the inputs differ (both sides are digested to 32 bytes). */
export function constantTimeEqual(a: string, b: string): boolean {
  const da = createHash('sha256').update(a).digest();
  const db = createHash('sha256').update(b).digest();
  return timingSafeEqual(da, db);
}
