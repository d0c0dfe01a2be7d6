import type { ServerResponse } from 'node:http';
import { esc } from '../oidc/pages.js';
import { pageHeaders } from './headers.js';
import { UI_PATHS } from './paths.js';

/** A server-rendered flowgate page in the UI's look: its stylesheet, at most a script file of its own. `body` is already escaped. */
export function sendUiPage(
  res: ServerResponse,
  status: number,
  p: { basePath: string; title: string; body: string; head?: boolean; script?: string },
  extra: Record<string, string | string[]> = {},
): void {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(p.title)} · MLflow</title>
<link rel="stylesheet" href="${esc(p.basePath + UI_PATHS.assets)}app.css">${p.script ? `<script defer src="${esc(p.basePath + UI_PATHS.assets + p.script)}"></script>` : ''}
</head><body class="fg-plain"><main class="fg-card">
<h1>${esc(p.title)}</h1>
${p.body}
</main></body></html>`;
  res.writeHead(status, { ...pageHeaders(html), ...extra });
  res.end(p.head ? undefined : html);
}
