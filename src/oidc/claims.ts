/** Reading identity-provider claims by a configured dotted path (`groups`, `realm_access.roles`). */
export type Claims = Readonly<Record<string, unknown>>;

const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * The value at a dotted path. A key that itself contains dots (some providers use URL-like claim
 * names such as `https://example.com/roles`) is tried whole first.
 */
export function readClaimPath(claims: unknown, path: string): unknown {
  if (path === '') return undefined;
  if (!isRecord(claims)) return undefined;
  if (Object.hasOwn(claims, path)) return claims[path];
  const dot = path.indexOf('.');
  if (dot === -1) return undefined;
  const head = path.slice(0, dot);
  if (!Object.hasOwn(claims, head)) return undefined;
  return readClaimPath(claims[head], path.slice(dot + 1));
}

/**
 * Role names from a claim value: an array of strings (the usual shape), or a single string. Blank,
 * over-long, non-string and control-character entries are dropped; duplicates removed; order kept.
 */
export function rolesFrom(value: unknown): string[] {
  const raw = Array.isArray(value) ? value : typeof value === 'string' ? [value] : [];
  const out = new Set<string>();
  for (const v of raw) {
    if (typeof v !== 'string') continue;
    const role = v.trim();
    if (role.length === 0 || role.length > 256 || CONTROL.test(role)) continue;
    out.add(role);
  }
  return [...out];
}

export const EMAIL_CLAIM = 'email';

/**
 * Whether a user name read from the `email` claim may be trusted as the person's: only when the
 * provider says it verified the address (`email_verified`, OIDC Core 5.1; a few providers send the
 * string "true"). Many let anyone type any address into their profile (Keycloak's account console,
 * with "verify email" off by default), so an unverified address names nobody.
 */
export const emailVerified = (claims: unknown): boolean => {
  const v = readClaimPath(claims, 'email_verified');
  return v === true || v === 'true';
};

/** A non-empty string claim, or undefined. */
export function stringClaim(claims: unknown, path: string): string | undefined {
  const v = readClaimPath(claims, path);
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
