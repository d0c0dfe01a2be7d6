/**
 * Where to send the browser after login: only a same-origin path under the base path. Anything else
 * (absolute or scheme-relative URLs, `/\host`, control characters anywhere, an encoded `//` or `\`,
 * flowgate's own login pages) falls back to the base path.
 */
const CONTROL = /[\u0000-\u001f\u007f]/;
const MAX_LENGTH = 2048;
const ORIGIN = 'http://return-to.invalid';
const LOOPING = ['/flowgate/login', '/flowgate/callback', '/flowgate/logout'];

export function homeOf(basePath: string): string {
  return basePath === '' ? '/' : `${basePath}/`;
}

export function safeReturnTo(raw: string | null | undefined, basePath: string): string {
  const home = homeOf(basePath);
  if (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_LENGTH) return home;
  if (CONTROL.test(raw) || raw.includes('\\')) return home;
  if (!raw.startsWith('/') || raw.startsWith('//')) return home;

  // Decoded once (and again, for double encoding): no hidden `//`, `\` or control character.
  let decoded = raw;
  for (let i = 0; i < 2; i++) {
    try {
      decoded = decodeURIComponent(decoded);
    } catch {
      return home;
    }
    if (CONTROL.test(decoded) || decoded.includes('\\') || /\/\//.test(decoded.split(/[?#]/)[0]!)) return home;
  }

  let url: URL;
  try {
    url = new URL(raw, ORIGIN);
  } catch {
    return home;
  }
  if (url.origin !== ORIGIN) return home;
  const path = url.pathname;
  if (basePath !== '' && path !== basePath && !path.startsWith(`${basePath}/`)) return home;
  const rel = basePath === '' ? path : path.slice(basePath.length) || '/';
  if (LOOPING.some((p) => rel === p || rel.startsWith(`${p}/`))) return home;
  const target = path + url.search + url.hash;
  // Judged again as it will be sent: resolving `/%3F/..//evil` leaves `//evil`, another host to a browser.
  return path.startsWith('//') || new URL(target, ORIGIN).origin !== ORIGIN ? home : target;
}
