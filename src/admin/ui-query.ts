import { z } from 'zod';
import type { AdminResult } from './types.js';
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

/** What an answer adds for the page after it: its token, or nothing on the last page. */
type NextPage = { next_page_token?: string };

/**
 * One page of rows (one extra row was asked for, to know whether another page exists), and `more`
 * to spread into the answer.
 */
export function paged<T>(rows: T[], q: PageQuery): { rows: T[]; more: NextPage } {
  if (rows.length <= q.max_results) return { rows, more: {} };
  return { rows: rows.slice(0, q.max_results), more: { next_page_token: String(q.page_token + q.max_results) } };
}

/**
 * A list screen's answer: the query read with `schema`, one page searched (`limit` is one row more
 * than a page, `offset` the page token), the page's rows shaped by `answer`, and the next page's token.
 */
export async function listPage<Q extends PageQuery, T>(
  query: URLSearchParams,
  schema: z.ZodType<Q>,
  search: (q: Q, limit: number, offset: number) => Promise<T[]>,
  answer: (rows: T[]) => object | Promise<object>,
): Promise<AdminResult> {
  const q = readQuery(schema, query);
  const page = paged(await search(q, q.max_results + 1, q.page_token), q);
  return { status: 200, body: { ...(await answer(page.rows)), ...page.more } };
}

/** The query fields of a log read newest first: how many entries (at most `max`), and the id a page reads below. */
export const newestFirstFields = (max: number, byDefault: number) => ({
  max_results: z.coerce.number().int().min(1).max(max).default(byDefault),
  page_token: z.coerce.number().int().min(1).optional(),
});

/**
 * A page of a log read newest first, keyed by id: the query read with `schema` (its page fields are
 * `newestFirstFields`), and after a full page the next page's token, its last id.
 */
export async function newestFirst<Q extends { max_results: number }, E extends { id: number }>(
  query: URLSearchParams,
  schema: z.ZodType<Q>,
  read: (q: Q) => Promise<E[]>,
): Promise<AdminResult> {
  const q = readQuery(schema, query);
  const entries = await read(q);
  const last = entries.at(-1);
  return { status: 200, body: { entries, ...(entries.length === q.max_results && last ? { next_page_token: String(last.id) } : {}) } };
}
