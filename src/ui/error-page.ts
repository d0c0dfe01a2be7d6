import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import { FlowgateError, sendError } from '../errors.js';
import { esc } from '../oidc/pages.js';
import { homeOf, safeReturnTo } from '../oidc/return-to.js';
import { sendUiPage } from './page.js';
import { UI_PATHS } from './paths.js';

/** MLflow's REST and AJAX APIs (flowgate's admin API among them): their callers read JSON, whatever they accept. */
const API_PATH = /^\/(api|ajax-api)(\/|$)/;
const HTML = /(^|,)\s*text\/html\s*(;|,|$)/i;

const TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Sign-in needed',
  403: 'Access denied',
  404: 'Not found',
  405: 'Method not allowed',
  500: 'Something went wrong',
  502: 'MLflow gave a broken answer',
  503: 'Not available right now',
  504: 'MLflow did not answer in time',
};

/** The request's path under the base path, as sent (for a request whose path could not be normalized). */
function sentPath(req: IncomingMessage, basePath: string): string {
  const path = (req.url ?? '/').split('?')[0]!;
  return basePath !== '' && path.startsWith(basePath) ? path.slice(basePath.length) || '/' : path;
}

/**
 * A browser loading a page (it accepts HTML, and is not a script's call: no `X-Requested-With`, and
 * `Sec-Fetch-Mode`, where sent, says navigate) outside MLflow's APIs. `path` is the normalized path
 * under the base path; without one (it could not be normalized) the path as sent is read.
 */
export function wantsPage(req: IncomingMessage, path: string | undefined, basePath: string): boolean {
  const accept = req.headers.accept;
  if (typeof accept !== 'string' || !HTML.test(accept)) return false;
  if (req.headers['x-requested-with'] !== undefined) return false;
  const mode = req.headers['sec-fetch-mode'];
  if (mode !== undefined && mode !== 'navigate') return false;
  return !API_PATH.test(path ?? sentPath(req, basePath));
}

/**
 * flowgate's refusal as a small page, in the sign-in page's look and under the UI's CSP: the same
 * status and the same message the JSON answer carries (a FlowgateError's message is safe to show),
 * escaped. A 401 carries no Basic challenge here, so the browser offers the sign-in page, not its
 * password dialog.
 */
export function sendErrorPage(req: IncomingMessage, res: ServerResponse, error: unknown, basePath: string): void {
  const err = error instanceof FlowgateError ? error : new FlowgateError('INTERNAL_ERROR', 'Internal error in flowgate');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(err.headers)) if (k.toLowerCase() !== 'www-authenticate') headers[k] = v;
  const requestId = res.getHeader('X-Request-Id');
  const home = homeOf(basePath);
  // Back to the same path after signing in; its query is left out, so nothing sent in it is written back.
  const returnTo = safeReturnTo((req.url ?? '/').split('?')[0], basePath);
  const action =
    err.status === 401
      ? `<a class="fg-button fg-primary" href="${esc(`${basePath}${UI_PATHS.login}?return_to=${encodeURIComponent(returnTo)}`)}">Sign in</a>`
      : `<a class="fg-button fg-primary" href="${esc(home)}">Go to MLflow</a>`;
  sendUiPage(
    res,
    err.status,
    {
      basePath,
      title: TITLES[err.status] ?? STATUS_CODES[err.status] ?? 'Error',
      head: req.method === 'HEAD',
      body: `<p class="fg-error" role="alert">${esc(err.message)}</p>
<p class="fg-muted">Error <code>${esc(err.code)}</code>${typeof requestId === 'string' ? `, request <code>${esc(requestId)}</code>` : ''}</p>
<p>${action}</p>`,
    },
    headers,
  );
}

/** flowgate's error answer in the form the caller reads: a page for a browser loading one, else MLflow's error JSON. */
export function sendErrorAnswer(req: IncomingMessage, res: ServerResponse, error: unknown, o: { basePath: string; path?: string }): void {
  if (wantsPage(req, o.path, o.basePath)) sendErrorPage(req, res, error, o.basePath);
  else sendError(res, error);
}
