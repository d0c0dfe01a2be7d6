import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

export interface Page {
  readonly title: string;
  /** Already-escaped HTML. */
  readonly body: string;
  readonly script?: string;
}

/** A small self-contained HTML page; an inline script runs only with this response's CSP nonce. */
export function sendPage(res: ServerResponse, status: number, page: Page, headers: Record<string, string | string[]> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const nonce = randomBytes(16).toString('base64');
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(page.title)} · flowgate</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2933}
h1{font-size:1.4rem}code,pre{background:#f0f2f5;padding:.2rem .4rem;border-radius:4px;word-break:break-all;white-space:pre-wrap}
button,a.button{font:inherit;padding:.5rem 1rem;border-radius:4px;border:1px solid #2563eb;background:#2563eb;color:#fff;cursor:pointer;text-decoration:none}</style>
</head><body><main>
<h1>${esc(page.title)}</h1>
${page.body}
</main>${page.script ? `<script nonce="${nonce}">${page.script}</script>` : ''}</body></html>`;
  res.writeHead(status, {
    ...headers,
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Length': Buffer.byteLength(html),
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'same-origin',
    'Content-Security-Policy': `default-src 'none'; style-src 'unsafe-inline'; script-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  });
  res.end(html);
}

export function redirect(res: ServerResponse, location: string, headers: Record<string, string | string[]> = {}): void {
  res.writeHead(302, { ...headers, Location: location, 'Cache-Control': 'no-store', 'Content-Length': 0 });
  res.end();
}

export const messagePage = (title: string, message: string, link?: { href: string; text: string }): Page => ({
  title,
  body: `<p>${esc(message)}</p>${link ? `<p><a class="button" href="${esc(link.href)}">${esc(link.text)}</a></p>` : ''}`,
});
