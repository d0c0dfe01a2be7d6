import { z } from 'zod';
import { parseWith } from './validation.js';

/** The list screens' query: a name filter and offset pages (the token is the next offset). */
export const pageQuery = z.object({
  q: z.string().max(256).default(''),
  max_results: z.coerce.number().int().min(1).max(200).default(25),
  page_token: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
});

export type PageQuery = z.infer<typeof pageQuery>;

export function readQuery<T extends z.ZodType>(schema: T, query: URLSearchParams): z.infer<T> {
  return parseWith(schema, Object.fromEntries(query), 'query string') as z.infer<T>;
}

/** One page of rows (one extra row was asked for, to know whether another page exists). */
export function paged<T>(rows: T[], q: PageQuery): { rows: T[]; next_page_token?: string } {
  if (rows.length <= q.max_results) return { rows };
  return { rows: rows.slice(0, q.max_results), next_page_token: String(q.page_token + q.max_results) };
}
