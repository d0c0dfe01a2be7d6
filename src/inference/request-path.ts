/**
 * A request target split into a normalized path and its raw query. The path keeps its
 * percent-encoding except for unreserved characters, which are decoded.
 */
export interface RequestPath {
  readonly path: string;
  /** Including the leading `?`, or empty. */
  readonly query: string;
}

export type PathResult = { readonly ok: true; readonly value: RequestPath } | { readonly ok: false; readonly reason: string };

/**
 * Routes are matched on this path and the same path is forwarded, so the model server can never
 * see a different path from the one the route check saw. Anything a server might resolve into
 * another path (dot segments, encoded slashes or backslashes, NUL, `;` parameters, double
 * encoding) is refused rather than repaired. Encoded unreserved characters (`%69` for `i`) are
 * decoded: every server reads them as the plain character, so matching on the encoded form would let
 * `/models/%69ris` pass a broader route's key check and still reach `/models/iris` behind it.
 */
export function normalizeRequestPath(url: string): PathResult {
  const q = url.indexOf('?');
  const rawPath = q === -1 ? url : url.slice(0, q);
  const query = q === -1 ? '' : url.slice(q);
  if (!rawPath.startsWith('/')) return { ok: false, reason: 'the request target must be an absolute path' };
  if (/[\x00-\x20\x7f\\#]/.test(rawPath)) return { ok: false, reason: 'the path contains a forbidden character' };
  if (/%(2f|5c|00)/i.test(rawPath)) return { ok: false, reason: 'the path contains an encoded slash, backslash or NUL' };
  // Servers differ on these, so a path using them has no one meaning: `;` starts path parameters
  // for some and is a plain character for others, a decoded `%` is decoded again by some.
  if (rawPath.includes(';') || /%3b/i.test(rawPath)) return { ok: false, reason: 'the path contains ";" (path parameters)' };
  if (/%25/.test(rawPath)) return { ok: false, reason: 'the path is percent-encoded twice' };
  if (/%([01][0-9a-f]|7f|3f|23)/i.test(rawPath)) return { ok: false, reason: 'the path contains an encoded control character, "?" or "#"' };
  if (/[\x00-\x1f\x7f#]/.test(query)) return { ok: false, reason: 'the query contains a forbidden character' };

  const segments = rawPath.split('/').filter((s, i, all) => s !== '' || i === all.length - 1);
  for (const segment of segments) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      return { ok: false, reason: 'the path contains malformed percent-encoding' };
    }
    if (decoded === '.' || decoded === '..') return { ok: false, reason: 'the path contains a "." or ".." segment' };
  }
  const canonical = segments.map(decodeUnreserved);
  // Repeated slashes are collapsed, not refused: clients build URLs by joining strings.
  return { ok: true, value: { path: `/${canonical.join('/')}`, query } };
}

/** RFC 3986 6.2.2.2: `%XX` for ALPHA, DIGIT, `-`, `.`, `_` or `~` means that character. */
function decodeUnreserved(segment: string): string {
  return segment.replace(/%([0-9A-Fa-f]{2})/g, (escape, hex: string) => {
    const char = String.fromCharCode(parseInt(hex, 16));
    return /^[A-Za-z0-9._~-]$/.test(char) ? char : escape;
  });
}

/**
 * A forgiving view of a path that failed normalization, used only to decide whether it was aimed
 * at an inference route (and so earns a 400 here rather than falling through to tracking).
 */
export function looseView(url: string): string {
  const rawPath = url.split('?')[0] ?? '';
  let view = rawPath;
  try {
    view = decodeURIComponent(rawPath);
  } catch {
    // keep the raw form
  }
  return view.replace(/\\/g, '/').replace(/\/{2,}/g, '/');
}

/** True when `path` is `prefix` or lies under it (segment boundary, so /models/iris ≠ /models/iris2). */
export function underPrefix(path: string, prefix: string): boolean {
  return path === prefix || path.startsWith(`${prefix}/`);
}
