import type { IncomingMessage } from 'node:http';
import { fromThisHost } from './same-origin.js';

/**
 * Whether a browser sent this request from a page of another site. A browser attaches credentials it
 * holds for this host (Basic credentials cached from a password dialog, a session cookie) to a form
 * post or a `no-cors` fetch that another site's page makes; a program sends neither `Sec-Fetch-Site`
 * nor `Origin`. `Sec-Fetch-Site` is the browser's own verdict and wins when present (an ingress that
 * rewrites `Host` cannot confuse it); without it, an `Origin` that does not name the host the request
 * was sent to (or the external origin, when one is configured) counts as another site, `null` included.
 */
export function fromAnotherSite(req: IncomingMessage, externalOrigin: string | undefined): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return true;
  if (site === 'same-origin' || site === 'none') return false;
  const origin = req.headers.origin;
  if (typeof origin !== 'string' || origin === '') return false;
  if (externalOrigin !== undefined && origin === externalOrigin) return false;
  return !fromThisHost(req);
}
