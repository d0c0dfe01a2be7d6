import type { IncomingMessage } from 'node:http';
import { parseCookie, stringifySetCookie } from 'cookie';

/** Names and attributes of flowgate's cookies, decided once at start. */
export interface CookiePolicy {
  readonly session: string;
  readonly binding: string;
  readonly secure: boolean;
  readonly path: string;
}

/**
 * `__Host-` (no Domain, Path=/, Secure) when the cookie can carry it: Secure on and flowgate at the
 * root. Under a base path the cookie is scoped to that path instead, as `__Secure-`: a page served over
 * plain http on the host cannot set a cookie of that name (a sibling host still can; `readCookie` refuses
 * the pair that makes).
 */
export function cookiePolicy(basePath: string, secure: boolean): CookiePolicy {
  const prefix = !secure ? '' : basePath === '' ? '__Host-' : '__Secure-';
  return {
    session: `${prefix}flowgate_session`,
    binding: `${prefix}flowgate_login`,
    secure,
    path: basePath === '' ? '/' : basePath,
  };
}

/**
 * The value of the cookie `name`, or `undefined` when the request carries none or more than one. Two
 * cookies of one name come from two places (one set by a sibling host for the parent domain, or for a
 * longer path): which the browser meant cannot be told, and the first one, which a parser keeps, is
 * the one with the longest path, the one a tossing attacker sets.
 */
export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  const value = parseCookie(header)[name];
  if (value === undefined) return undefined;
  let seen = 0;
  for (const piece of header.split(';')) if (piece.trimStart().startsWith(`${name}=`) && ++seen > 1) return undefined;
  return value;
}

export function setCookie(p: CookiePolicy, name: string, value: string, maxAgeSeconds: number): string {
  return stringifySetCookie(name, value, {
    httpOnly: true,
    sameSite: 'lax',
    secure: p.secure,
    path: p.path,
    maxAge: maxAgeSeconds,
  });
}

export function clearCookie(p: CookiePolicy, name: string): string {
  return stringifySetCookie(name, '', { httpOnly: true, sameSite: 'lax', secure: p.secure, path: p.path, maxAge: 0 });
}
