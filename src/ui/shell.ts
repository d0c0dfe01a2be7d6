import type { IncomingMessage, ServerResponse } from 'node:http';
import { upstreamFailure } from '../upstream/mlflow-connection.js';
import { sendError } from '../errors.js';
import { esc } from '../oidc/pages.js';
import { UI_PATHS } from './paths.js';

export interface ShellOptions {
  /** MLflow's URL including its static prefix, without a trailing slash. */
  readonly upstreamBase: string;
  readonly basePath: string;
  readonly timeoutMs: number;
}

/** Headers of MLflow's answer that describe the old body or its hop, not the page. */
const DROPPED = new Set(['content-length', 'content-encoding', 'transfer-encoding', 'connection', 'keep-alive', 'etag', 'last-modified']);

/** Adds flowgate's menu (a stylesheet and a deferred script of its own, nothing inline) to MLflow's page. */
export function injectMenu(html: string, basePath: string): string {
  const at = esc(basePath + UI_PATHS.assets);
  const tags = `<link rel="stylesheet" href="${at}menu.css"><script defer src="${at}menu.js"></script>`;
  const head = html.search(/<\/head>/i);
  return head === -1 ? html + tags : html.slice(0, head) + tags + html.slice(head);
}

/**
 * MLflow's UI shell (`GET /`), fetched from MLflow and answered with flowgate's menu added. MLflow's
 * own headers (its security headers among them) are kept; an answer that is not an HTML page passes as it is.
 */
export function createShell(o: ShellOptions) {
  return async (req: IncomingMessage, res: ServerResponse, search: string): Promise<void> => {
    let answer: Response;
    try {
      answer = await fetch(`${o.upstreamBase}/${search ? `?${search}` : ''}`, {
        headers: { accept: 'text/html', 'accept-encoding': 'identity' },
        redirect: 'manual',
        signal: AbortSignal.timeout(o.timeoutMs),
      });
    } catch (e) {
      req.resume();
      return sendError(res, upstreamFailure(((e as Error).cause as Error | undefined) ?? (e as Error)));
    }
    const body = await answer.text();
    const isHtml = (answer.headers.get('content-type') ?? '').startsWith('text/html');
    const html = answer.status === 200 && isHtml ? injectMenu(body, o.basePath) : body;
    const headers: Record<string, string> = {};
    answer.headers.forEach((v, k) => {
      if (!DROPPED.has(k)) headers[k] = v;
    });
    headers['cache-control'] = 'no-cache';
    res.writeHead(answer.status, { ...headers, 'content-length': String(Buffer.byteLength(html)) });
    res.end(req.method === 'HEAD' ? undefined : html);
  };
}
