/**
 * What a client sends flowgate that no server behind it may see: flowgate's cookies (session, login
 * binding) and identity headers only flowgate may set. Both forwarders (MLflow's and the inference
 * routes') leave them out, so a model server or MLflow that logs requests never holds a replayable
 * session.
 */

/** Identity headers only flowgate may set; a client's copy, in any case or `_` spelling, is dropped. */
export const IDENTITY_HEADER = /^x[-_](forwarded[-_](user|email|groups|preferred[-_]username|access[-_]token)|auth[-_]request[-_].*|remote[-_]user|user|email|flowgate[-_].*)$/i;

/** flowgate's own cookies, under any of the names it gives them (`__Host-`/`__Secure-` prefixed or not). */
const FLOWGATE_COOKIE = /^(__Host-|__Secure-)?flowgate_[^=]*=/i;
const MENTIONS_FLOWGATE_COOKIE = /flowgate_/i;

/** A `Cookie` header without flowgate's cookies: empty when nothing else was in it. */
export function withoutFlowgateCookies(cookie: string): string {
  if (!MENTIONS_FLOWGATE_COOKIE.test(cookie)) return cookie;
  return cookie
    .split(';')
    .filter((c) => !FLOWGATE_COOKIE.test(c.trim()))
    .join(';')
    .trim();
}

/** Whether a `Set-Cookie` value sets one of flowgate's cookies (which only flowgate may set on its host). */
export function setsFlowgateCookie(setCookie: string): boolean {
  return FLOWGATE_COOKIE.test(setCookie.trimStart());
}
