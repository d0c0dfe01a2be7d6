import type { Noun } from './action.js';
import { UsageError } from './connection.js';
import { printRows } from './output.js';

export const AUDIT: Noun = {
  list: {
    usage: 'flowgate audit list [--max N] [--page-token TOKEN]',
    options: { max: { type: 'string' }, 'page-token': { type: 'string' } },
    async run({ client, io, json, values }) {
      const q = new URLSearchParams();
      if (values.max !== undefined) {
        if (!/^\d+$/.test(values.max as string)) throw new UsageError('--max takes a number');
        q.set('max_results', values.max as string);
      }
      if (values['page-token'] !== undefined) q.set('page_token', values['page-token'] as string);
      const raw = await client.call<{ entries: Record<string, unknown>[]; next_page_token?: string }>('GET', `permissions/audit${q.size ? `?${q}` : ''}`);
      printRows(io, json, raw, raw.entries, ['id', 'at', 'actor', 'action', 'target']);
      if (!json && raw.next_page_token) io.err(`more: --page-token ${raw.next_page_token}\n`);
    },
  },
};
