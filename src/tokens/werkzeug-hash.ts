import { pbkdf2, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);
const scryptAsync = promisify(scrypt) as (password: Buffer, salt: Buffer, keylen: number, options: { N: number; r: number; p: number; maxmem: number }) => Promise<Buffer>;

/** What a stored werkzeug hash is: the method with its parameters, the salt (used as text, as werkzeug does), the expected digest. */
export type WerkzeugHash =
  | { readonly method: 'scrypt'; readonly n: number; readonly r: number; readonly p: number; readonly salt: string; readonly digest: Buffer }
  | { readonly method: 'pbkdf2'; readonly hash: PbkdfHash; readonly iterations: number; readonly salt: string; readonly digest: Buffer };

const PBKDF_HASHES = { sha1: 20, sha224: 28, sha256: 32, sha384: 48, sha512: 64 } as const;
type PbkdfHash = keyof typeof PBKDF_HASHES;

// Werkzeug's defaults when a method names no parameters.
const SCRYPT_DEFAULT = { n: 2 ** 15, r: 8, p: 1 };
const PBKDF2_DEFAULT_ITERATIONS = 1_000_000;
// Bounds keep a hash from making one check cost seconds or gigabytes; werkzeug's own hashes are far inside them.
const MAX_SCRYPT_MEMORY = 256 * 1024 * 1024;
const MAX_PBKDF2_ITERATIONS = 10_000_000;

const isPowerOfTwo = (n: number) => n > 1 && (n & (n - 1)) === 0;
const positiveInt = (s: string | undefined): number | undefined => (s !== undefined && /^[1-9]\d{0,9}$/.test(s) ? Number(s) : undefined);

/**
 * Reads `method$salt$hexdigest` as werkzeug's `generate_password_hash` writes it
 * (`scrypt:32768:8:1$…$…`, `pbkdf2:sha256:600000$…$…`). Undefined for anything else: a plain or
 * unknown method, a malformed field, parameters out of bounds. Such a hash never authenticates.
 */
export function parseWerkzeugHash(stored: string): WerkzeugHash | undefined {
  const parts = stored.split('$');
  if (parts.length !== 3) return undefined;
  const [methodText, salt, hex] = parts as [string, string, string];
  if (salt.length === 0 || !/^(?:[0-9a-f]{2})+$/.test(hex)) return undefined;
  const digest = Buffer.from(hex, 'hex');
  const [method, ...args] = methodText.split(':');
  if (method === 'scrypt') {
    let { n, r, p } = SCRYPT_DEFAULT;
    if (args.length > 0) {
      if (args.length !== 3) return undefined;
      const [a, b, c] = args.map(positiveInt);
      if (a === undefined || b === undefined || c === undefined) return undefined;
      [n, r, p] = [a, b, c];
    }
    if (!isPowerOfTwo(n) || 128 * n * r * p > MAX_SCRYPT_MEMORY || digest.length !== 64) return undefined;
    return { method: 'scrypt', n, r, p, salt, digest };
  }
  if (method === 'pbkdf2') {
    if (args.length > 2) return undefined;
    const hash = (args[0] ?? 'sha256') as PbkdfHash;
    if (!Object.hasOwn(PBKDF_HASHES, hash)) return undefined;
    const iterations = args.length === 2 ? positiveInt(args[1]) : PBKDF2_DEFAULT_ITERATIONS;
    if (iterations === undefined || iterations > MAX_PBKDF2_ITERATIONS || digest.length !== PBKDF_HASHES[hash]) return undefined;
    return { method: 'pbkdf2', hash, iterations, salt, digest };
  }
  return undefined;
}

/** Whether the password is the one hashed; the digests are compared in constant time. */
export async function werkzeugPasswordMatches(hash: WerkzeugHash, password: string): Promise<boolean> {
  const secret = Buffer.from(password, 'utf8');
  const salt = Buffer.from(hash.salt, 'utf8');
  const computed =
    hash.method === 'scrypt'
      ? await scryptAsync(secret, salt, hash.digest.length, { N: hash.n, r: hash.r, p: hash.p, maxmem: 2 * 128 * hash.n * hash.r * hash.p + 1024 * 1024 })
      : await pbkdf2Async(secret, salt, hash.iterations, hash.digest.length, hash.hash);
  return computed.length === hash.digest.length && timingSafeEqual(computed, hash.digest);
}
