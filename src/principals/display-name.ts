const CONTROL = /[\u0000-\u001f\u007f]/g;

/**
 * A display name as an identity provider, a token, SCIM or an import gives it, made storable: the
 * control characters the admin API refuses (PostgreSQL refuses a NUL outright; escapes and line breaks
 * would reach the CLI's tables) are dropped, and it is cut to 256 characters. `fallback` when nothing is left.
 */
export function storableDisplayName(given: string | undefined, fallback: string): string {
  const kept = given === undefined ? '' : given.replace(CONTROL, '').slice(0, 256);
  return kept === '' ? fallback : kept;
}
