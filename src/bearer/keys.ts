import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWTHeaderParameters, type FlattenedJWSInput } from 'jose';
import type { BearerIssuerConfig } from './config.js';

/** Keys could not be read at all (the provider is down, the file is gone): the request gets 503, not 401. */
export class KeysUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeysUnavailable';
  }
}

type KeyGetter = ReturnType<typeof createLocalJWKSet>;
const MAX_DOCUMENT_BYTES = 512 * 1024;
const FETCH_TIMEOUT_MS = 5000;

/** One issuer's signing keys: read lazily, once at a time, kept until `jwks_max_age_seconds`, re-read on an unknown `kid` at most once per cooldown. */
export interface KeySource {
  /** The key for a token's protected header (jose's key-resolver shape). */
  (header: JWTHeaderParameters, token: FlattenedJWSInput): ReturnType<KeyGetter>;
}

async function fetchJson(url: string, what: string): Promise<unknown> {
  const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(FETCH_TIMEOUT_MS), headers: { accept: 'application/json' } });
  if (res.status !== 200) throw new Error(`${what} answered ${res.status}`);
  const text = await res.text();
  if (text.length > MAX_DOCUMENT_BYTES) throw new Error(`${what} is larger than ${MAX_DOCUMENT_BYTES} bytes`);
  return JSON.parse(text);
}

const LOOPBACK = ['127.0.0.1', 'localhost', '[::1]'];
const safeUrl = (v: unknown): v is string => {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'https:' || (u.protocol === 'http:' && LOOPBACK.includes(u.hostname));
  } catch {
    return false;
  }
};

/** Where the JWKS comes from: its URL (given, or found by discovery), or a file. */
function jwksReader(issuer: BearerIssuerConfig): () => Promise<unknown> {
  if (issuer.jwks_file) {
    const file = issuer.jwks_file;
    return async () => JSON.parse(await readFile(file, 'utf8'));
  }
  let jwksUrl = issuer.jwks_url;
  return async () => {
    if (!jwksUrl) {
      const meta = (await fetchJson(`${issuer.issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, 'discovery')) as Record<string, unknown>;
      // The metadata must be the issuer's own (OIDC Discovery §4.3), and its key URL one flowgate may fetch.
      if (meta?.issuer !== issuer.issuer) throw new Error('discovery names another issuer');
      if (!safeUrl(meta.jwks_uri)) throw new Error('discovery has no https jwks_uri');
      jwksUrl = meta.jwks_uri;
    }
    return fetchJson(jwksUrl, 'the JWKS');
  };
}

export function createKeySource(issuer: BearerIssuerConfig, onRefreshFailed: (err: Error) => void, now: () => number = Date.now): KeySource {
  const read = jwksReader(issuer);
  const cooldownMs = issuer.jwks_cooldown_seconds * 1000;
  const maxAgeMs = issuer.jwks_max_age_seconds * 1000;
  let keys: KeyGetter | undefined;
  let readAt = -Infinity;
  let attemptedAt = -Infinity;
  let pending: Promise<void> | undefined;

  /** One read at a time; a failed read keeps the keys there were. */
  const refresh = (): Promise<void> =>
    (pending ??= (async () => {
      attemptedAt = now();
      try {
        const jwks = await read();
        if (!jwks || typeof jwks !== 'object' || !Array.isArray((jwks as JSONWebKeySet).keys)) throw new Error('not a JSON Web Key Set');
        keys = createLocalJWKSet(jwks as JSONWebKeySet);
        readAt = now();
      } catch (e) {
        onRefreshFailed(e as Error);
      } finally {
        pending = undefined;
      }
    })());

  const coolingDown = () => now() - attemptedAt < cooldownMs;

  return async (header, token) => {
    if ((!keys || now() - readAt >= maxAgeMs) && !coolingDown()) await refresh();
    else if (pending) await pending;
    if (!keys) throw new KeysUnavailable(`the signing keys of ${issuer.issuer} could not be read`);
    try {
      return await keys(header, token);
    } catch (e) {
      // A key id not seen yet: the issuer may have rotated. Read again, unless a read was just tried.
      if (!(e instanceof errors.JWKSNoMatchingKey) || coolingDown()) throw e;
      await refresh();
      return keys(header, token);
    }
  };
}
