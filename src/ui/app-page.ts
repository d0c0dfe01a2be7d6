import type { ServerResponse } from 'node:http';
import { esc } from '../oidc/pages.js';
import { pageHeaders } from './headers.js';
import { UI_PATHS } from './paths.js';

/**
 * The Manage screens' HTML: the built script and stylesheet, and what the script needs to know
 * in meta tags (read with the DOM, never executed): where flowgate lives and the session's CSRF token.
 */
export function sendAppPage(res: ServerResponse, basePath: string, csrf: string, head: boolean): void {
  const assets = esc(basePath + UI_PATHS.assets);
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Permissions · MLflow</title>
<meta name="flowgate-base" content="${esc(basePath)}">
<meta name="flowgate-csrf" content="${esc(csrf)}">
<link rel="stylesheet" href="${assets}app.css">
<script defer src="${assets}app.js"></script>
</head><body><div id="app"></div></body></html>`;
  res.writeHead(200, pageHeaders(html));
  res.end(head ? undefined : html);
}
