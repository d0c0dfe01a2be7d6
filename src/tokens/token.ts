import * as crypto from 'node:crypto';
import { createHash, randomBytes } from 'node:crypto';

/** 32 random bytes = 256 bits from the CSPRNG; the prefix lets secret scanners spot a leaked token. */
export const TOKEN_PREFIX = 'fgt_';

export function mintToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

/**
 * A token carries 256 bits of entropy, so one fast SHA-256 is as strong as a slow KDF here and
 * keeps verification cheap; slow hashes protect low-entropy passwords, which these are not.
 */
export const hashToken: (token: string) => string =
  // crypto.hash (Node >= 20.12) is the one-shot form: less than half the cost of createHash.
  typeof crypto.hash === 'function'
    ? (token) => crypto.hash('sha256', token, 'base64url')
    : (token) => createHash('sha256').update(token).digest('base64url');

/**
 * Equality whose time does not depend on where the inputs differ. Only the lengths may differ in
 * time, and the length of a username is no secret. Compared by UTF-16 code unit without copying
 * into Buffers: this runs on every Basic-authenticated request.
 */
export function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}
