import type { IncomingMessage } from 'node:http';

/**
 * Whether a browser request comes from a page of this very host: its `Origin` (or, when a browser
 * sent none, its `Referer`) names the host the request was sent to. Used where no external URL is
 * configured (sign-in without OIDC); a browser never lets a page on another site set either header.
 * `Origin` names no scheme flowgate can check behind a TLS-terminating ingress, so a page of
 * `http://<host>` (injected on the wire) would pass it: the browser's own `Sec-Fetch-Site`, which
 * tells another scheme apart, refuses first.
 */
export function fromThisHost(req: IncomingMessage): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return false;
  const host = req.headers.host;
  if (typeof host !== 'string' || host === '') return false;
  const claimed = typeof req.headers.origin === 'string' && req.headers.origin !== '' ? req.headers.origin : req.headers.referer;
  if (typeof claimed !== 'string' || claimed === '' || claimed === 'null') return false;
  try {
    const u = new URL(claimed);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host === host.toLowerCase();
  } catch {
    return false;
  }
}
