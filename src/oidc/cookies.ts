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
 * root. Under a base path the cookie is scoped to that path instead.
 */
export function cookiePolicy(basePath: string, secure: boolean): CookiePolicy {
  const host = secure && basePath === '';
  return {
    session: host ? '__Host-flowgate_session' : 'flowgate_session',
    binding: host ? '__Host-flowgate_login' : 'flowgate_login',
    secure,
    path: basePath === '' ? '/' : basePath,
  };
}

export function readCookie(req: IncomingMessage, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  return parseCookie(header)[name];
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
