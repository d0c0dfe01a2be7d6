import type { IncomingMessage } from 'node:http';
import { constantTimeEqual } from '../tokens/token.js';

export const CSRF_HEADER = 'x-flowgate-csrf';
const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

export function isStateChanging(method: string | undefined): boolean {
  return !SAFE.has((method ?? 'GET').toUpperCase());
}

/**
 * Whether a state-changing request that carries a session cookie may proceed: its `Origin` (or,
 * when a browser sent none, its `Referer`'s origin) must be flowgate's external origin; with
 * neither, the session's CSRF token in `X-Flowgate-CSRF` is required. A present but foreign Origin
 * is refused even with a token. Requests authenticated by Basic never get here.
 */
export function csrfAllows(req: IncomingMessage, externalOrigin: string, csrfSecret: string): boolean {
  const origin = req.headers.origin;
  if (typeof origin === 'string' && origin !== '') return origin === externalOrigin;
  const referer = req.headers.referer;
  if (typeof referer === 'string' && referer !== '') {
    try {
      return new URL(referer).origin === externalOrigin;
    } catch {
      return false;
    }
  }
  const token = req.headers[CSRF_HEADER];
  return typeof token === 'string' && token !== '' && constantTimeEqual(token, csrfSecret);
}
