import { createHash, timingSafeEqual } from 'node:crypto';

/** A valid key as held in memory: only its digest, never the plain value. */
export interface ApiKey {
  /** A name for logs and metrics; never the key itself. */
  readonly id: string;
  readonly digest: Buffer;
  /** Route names the key opens; undefined = every route. */
  readonly routes?: ReadonlySet<string>;
  /** Model names the key opens; undefined = every model. */
  readonly models?: ReadonlySet<string>;
}

export type KeyCheck =
  | { readonly ok: true; readonly keyId: string }
  | { readonly ok: false; readonly reason: 'missing_key' | 'empty_key' | 'repeated_key' | 'wrong_key' | 'key_out_of_scope'; readonly keyId?: string };

/** What the request is for, as far as a key's scope is concerned. */
export interface KeyTarget {
  readonly route: string;
  readonly model: string | undefined;
}

export const API_KEY_HEADER = 'x-api-key';

export function digestKey(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Reads the header from rawHeaders because Node joins repeated unknown headers with ", ", which
 * would hide a second key.
 */
export function presentedKeys(rawHeaders: readonly string[]): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]!.toLowerCase() === API_KEY_HEADER) values.push(rawHeaders[i + 1]!);
  }
  return values;
}

/**
 * Both sides are SHA-256 digests, so every comparison is over 32 bytes whatever the key length, and
 * every valid key is compared: the time taken does not tell which key, or how much of one, matched.
 */
export function checkApiKey(rawHeaders: readonly string[], validKeys: readonly ApiKey[], target: KeyTarget): KeyCheck {
  const presented = presentedKeys(rawHeaders);
  if (presented.length === 0) return { ok: false, reason: 'missing_key' };
  if (presented.length > 1) return { ok: false, reason: 'repeated_key' };
  const value = presented[0]!.trim();
  if (value === '') return { ok: false, reason: 'empty_key' };

  const digest = digestKey(value);
  const matches: ApiKey[] = [];
  for (const key of validKeys) {
    if (timingSafeEqual(digest, key.digest)) matches.push(key);
  }
  if (matches.length === 0) return { ok: false, reason: 'wrong_key' };
  const allowed = matches.find((key) => keyOpens(key, target));
  if (allowed) return { ok: true, keyId: allowed.id };
  return { ok: false, reason: 'key_out_of_scope', keyId: matches[0]!.id };
}

function keyOpens(key: ApiKey, target: KeyTarget): boolean {
  if (key.routes && !key.routes.has(target.route)) return false;
  if (key.models && (target.model === undefined || !key.models.has(target.model))) return false;
  return true;
}
