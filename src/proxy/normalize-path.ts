import { badRequest } from '../errors.js';

export interface NormalizedTarget {
  /** Decoded, dot segments resolved, duplicate slashes folded, `\` read as `/`. What routes match on. */
  readonly path: string;
  /** `path` with each segment percent-encoded again: what the routers see and what is forwarded. */
  readonly encoded: string;
  /** The raw query string without `?` (never part of matching). */
  readonly search: string;
}

const CONTROL = /[\u0000-\u001f\u007f]/;
/**
 * A path that normalization would hand back unchanged: non-empty segments of unreserved
 * characters, none starting with a dot (so no `.`/`..`), no `%`, `\` or `//`. Almost every API
 * call looks like this and skips the decode/split/re-encode work.
 */
const ALREADY_NORMAL = /^(?:\/[A-Za-z0-9_~-][A-Za-z0-9_.~-]*)+\/?$/;
const STILL_ENCODED = /%[0-9a-fA-F]{2}/;

/**
 * The one place a request target is normalized. A path is decoded exactly once; a `%XX` left after
 * that (double encoding) is refused rather than guessed at, as are control characters and `..`
 * above the root, so the path matched is the path forwarded.
 */
export function normalizeTarget(rawUrl: string): NormalizedTarget {
  const hash = rawUrl.indexOf('#');
  const url = hash === -1 ? rawUrl : rawUrl.slice(0, hash);
  const q = url.indexOf('?');
  const rawPath = q === -1 ? url : url.slice(0, q);
  const search = q === -1 ? '' : url.slice(q + 1);
  if (ALREADY_NORMAL.test(rawPath)) return { path: rawPath, encoded: rawPath, search };
  return normalizeFully(rawPath, search);
}

/** The general case; exported so tests can check the fast path gives the same answer. */
export function normalizeFully(rawPath: string, search: string): NormalizedTarget {
  if (!rawPath.startsWith('/')) throw badRequest('The request path must start with /');

  let decoded: string;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    throw badRequest('The request path has a malformed percent-encoding');
  }
  if (STILL_ENCODED.test(decoded)) throw badRequest('The request path is encoded more than once');
  if (CONTROL.test(decoded)) throw badRequest('The request path contains control characters');

  const unified = decoded.replaceAll('\\', '/');
  const trailingSlash = unified.length > 1 && unified.endsWith('/');
  const segments: string[] = [];
  for (const seg of unified.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (segments.length === 0) throw badRequest('The request path climbs above the root');
      segments.pop();
      continue;
    }
    segments.push(seg);
  }
  const tail = trailingSlash && segments.length > 0 ? '/' : '';
  return {
    path: '/' + segments.join('/') + tail,
    encoded: '/' + segments.map(encodeSegment).join('/') + tail,
    search,
  };
}

/**
 * The path of one of flowgate's own API routes, whose segments carry names: split where the client
 * put a `/` (or `\`, which browsers send as `/`), and only then decoded, so an encoded `/` stays
 * inside its name. A `.` or `..` segment is not resolved (resolved, a resource named `../../users/bob`
 * turned a grant on it into a call on another route): the answer is then undefined, for the caller to
 * refuse. Call after `normalizeTarget` accepted the same target (it refuses malformed and double
 * encoding). Each segment is encoded as `encoded` is.
 */
export function ownRoutePath(rawUrl: string): string | undefined {
  const end = rawUrl.search(/[?#]/);
  const rawPath = end === -1 ? rawUrl : rawUrl.slice(0, end);
  if (ALREADY_NORMAL.test(rawPath)) return rawPath;
  const segments: string[] = [];
  for (const raw of rawPath.split(/[\\/]/)) {
    if (raw === '') continue;
    const seg = decodeURIComponent(raw);
    if (seg === '.' || seg === '..') return undefined;
    segments.push(seg);
  }
  const tail = segments.length > 0 && /[\\/]$/.test(rawPath) ? '/' : '';
  return '/' + segments.map(encodeSegment).join('/') + tail;
}

/** encodeURIComponent, but keeping the characters RFC 3986 allows literally in a segment (bar `;`). */
export function encodeSegment(segment: string): string {
  return encodeURIComponent(segment).replace(/%(3A|40|21|24|26|27|28|29|2A|2B|2C|3D)/g, (m) =>
    decodeURIComponent(m),
  );
}

/** Strips the configured base path; `undefined` when the path is outside it. */
export function stripBasePath(path: string, basePath: string): string | undefined {
  if (basePath === '') return path;
  if (path === basePath) return '/';
  if (path.startsWith(basePath + '/')) return path.slice(basePath.length);
  return undefined;
}
