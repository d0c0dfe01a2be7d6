import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { FlowgateError } from '../errors.js';
import { esc } from '../oidc/pages.js';
import { upstreamFailure } from '../upstream/mlflow-connection.js';
import { sendErrorAnswer } from './error-page.js';
import { UI_PATHS } from './paths.js';

export interface ShellOptions {
  /** MLflow's URL including its static prefix, without a trailing slash. */
  readonly upstreamBase: string;
  readonly basePath: string;
  readonly timeoutMs: number;
}

/** Headers of MLflow's answer that describe the old body or its hop, not the page. */
const DROPPED = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive', 'etag', 'last-modified']);
const MAX_PAGE_BYTES = 1024 * 1024;

/** Adds flowgate's menu (a stylesheet and a deferred script of its own, nothing inline) to MLflow's page. */
export function injectMenu(html: string, basePath: string): string {
  const at = esc(basePath + UI_PATHS.assets);
  const tags = `<link rel="stylesheet" href="${at}menu.css"><script defer src="${at}menu.js"></script>`;
  const head = html.search(/<\/head>/i);
  return head === -1 ? html + tags : html.slice(0, head) + tags + html.slice(head);
}

interface Page {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  readonly body: Buffer;
}

function fetchPage(url: URL, timeoutMs: number): Promise<Page> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const call = send(url, { headers: { accept: 'text/html', 'accept-encoding': 'identity' } }, (answer) => {
      const chunks: Buffer[] = [];
      let size = 0;
      answer.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_PAGE_BYTES) call.destroy(new Error('MLflow page too large'));
        else chunks.push(c);
      });
      answer.on('end', () => resolve({ status: answer.statusCode ?? 502, headers: answer.headers, body: Buffer.concat(chunks) }));
      answer.on('error', reject);
    });
    call.setTimeout(timeoutMs, () => call.destroy(Object.assign(new Error('MLflow did not answer in time'), { code: 'FLOWGATE_UPSTREAM_SILENT' })));
    call.on('error', reject);
    call.end();
  });
}

/**
 * Whether MLflow's answer says who may frame it. MLflow before 3.5 (and one started with
 * `--disable-security-middleware` or `MLFLOW_SERVER_X_FRAME_OPTIONS=NONE`) says nothing; its page,
 * signed in through a SameSite=Lax cookie, could then be framed by any page of the same site and its
 * buttons (flowgate's Sign out among them) clicked through an invisible frame. Then the shell is SAMEORIGIN.
 */
function saysWhoMayFrame(headers: Record<string, string | string[]>): boolean {
  if (headers['x-frame-options'] !== undefined) return true;
  const csp = headers['content-security-policy'];
  return csp !== undefined && /frame-ancestors/i.test(Array.isArray(csp) ? csp.join(';') : csp);
}

/**
 * MLflow's UI shell (`GET /`), fetched from MLflow and answered with flowgate's menu added. MLflow's
 * own headers (its security headers among them) are kept, SAMEORIGIN added where they say nothing about
 * framing; an answer that is not an HTML page passes as it is.
 */
export function createShell(o: ShellOptions) {
  return async (req: IncomingMessage, res: ServerResponse, search: string): Promise<void> => {
    req.resume();
    let page: Page;
    try {
      page = await fetchPage(new URL(`${o.upstreamBase}/${search ? `?${search}` : ''}`), o.timeoutMs);
    } catch (e) {
      return sendErrorAnswer(req, res, e instanceof FlowgateError ? e : upstreamFailure(e as Error), { basePath: o.basePath, path: '/' });
    }
    const isHtml = String(page.headers['content-type'] ?? '').startsWith('text/html');
    const body = page.status === 200 && isHtml ? Buffer.from(injectMenu(page.body.toString('utf8'), o.basePath)) : page.body;
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(page.headers)) if (v !== undefined && !DROPPED.has(k)) headers[k] = v;
    if (!saysWhoMayFrame(headers)) headers['x-frame-options'] = 'SAMEORIGIN';
    headers['cache-control'] = 'no-cache';
    headers['content-length'] = String(body.length);
    res.writeHead(page.status, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
