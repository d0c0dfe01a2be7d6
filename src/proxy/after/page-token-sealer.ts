import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Sealed page tokens: AES-256-GCM with a random 96-bit IV, the plaintext padded to a size the
 * caller chooses (so a token's length says nothing about what it holds) and the binding (who, and
 * which search) authenticated as associated data, so a token opens only for the caller and search
 * it was sealed for. Previous keys open tokens but never seal, so keys rotate without breaking a
 * paging client mid-way.
 */
export interface PageTokenKeys {
  readonly current: Buffer;
  readonly previous: readonly Buffer[];
}

export interface PageTokenSealer {
  /** `payload` sealed for `binding`, its plaintext padded to `paddedBytes` (or the next multiple when larger). */
  seal(payload: Buffer, binding: Buffer, paddedBytes: number): string;
  /** The payload, or undefined for a token this sealer did not make for `binding`, or made too long ago. */
  open(token: string, binding: Buffer): Buffer | undefined;
}

export interface SealerOptions {
  readonly now?: () => number;
  /** A token older than this no longer opens. */
  readonly maxAgeMs?: number;
}

export const PAGE_TOKEN_KEY_BYTES = 32;
const PREFIX = 'fg2.';
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Plaintext header: payload length (uint32) and the sealing time in ms (uint64). */
const HEADER_BYTES = 12;
const DAY_MS = 86_400_000;
/** Clocks of two flowgates sharing a store may disagree a little. */
const CLOCK_SKEW_MS = 60_000;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

export function createPageTokenSealer(keys: PageTokenKeys, options: SealerOptions = {}): PageTokenSealer {
  for (const key of [keys.current, ...keys.previous])
    if (key.length !== PAGE_TOKEN_KEY_BYTES) throw new Error(`page token keys must be ${PAGE_TOKEN_KEY_BYTES} bytes`);
  const now = options.now ?? Date.now;
  const maxAgeMs = options.maxAgeMs ?? DAY_MS;
  const openers = [keys.current, ...keys.previous];

  function seal(payload: Buffer, binding: Buffer, paddedBytes: number): string {
    const needed = HEADER_BYTES + payload.length;
    const size = Math.max(1, Math.ceil(needed / paddedBytes)) * paddedBytes;
    const plain = Buffer.alloc(size);
    plain.writeUInt32BE(payload.length, 0);
    plain.writeBigUInt64BE(BigInt(now()), 4);
    payload.copy(plain, HEADER_BYTES);
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', keys.current, iv);
    cipher.setAAD(binding);
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    return PREFIX + sealed.toString('base64url');
  }

  function decrypt(key: Buffer, iv: Buffer, body: Buffer, tag: Buffer, binding: Buffer): Buffer | undefined {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
      decipher.setAAD(binding);
      decipher.setAuthTag(tag);
      return Buffer.concat([decipher.update(body), decipher.final()]);
    } catch {
      return undefined;
    }
  }

  function open(token: string, binding: Buffer): Buffer | undefined {
    if (!token.startsWith(PREFIX)) return undefined;
    const text = token.slice(PREFIX.length);
    if (!BASE64URL.test(text)) return undefined;
    const sealed = Buffer.from(text, 'base64url');
    // One spelling per token: a second encoding of the same bytes is not the token that was issued.
    if (sealed.toString('base64url') !== text || sealed.length < IV_BYTES + HEADER_BYTES + TAG_BYTES) return undefined;
    const iv = sealed.subarray(0, IV_BYTES);
    const body = sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES);
    const tag = sealed.subarray(sealed.length - TAG_BYTES);
    let plain: Buffer | undefined;
    for (const key of openers) if ((plain = decrypt(key, iv, body, tag, binding))) break;
    if (!plain) return undefined;
    const length = plain.readUInt32BE(0);
    const sealedAt = Number(plain.readBigUInt64BE(4));
    if (length > plain.length - HEADER_BYTES) return undefined;
    const age = now() - sealedAt;
    if (age > maxAgeMs || age < -CLOCK_SKEW_MS) return undefined;
    return plain.subarray(HEADER_BYTES, HEADER_BYTES + length);
  }

  return { seal, open };
}
