import { badRequest, FlowgateError } from '../../errors.js';
import { decodePageToken, encodePageToken } from './page-token.js';
import type { CallContext, UpstreamAnswer, UpstreamJson } from '../../upstream/json-client.js';

export interface FilteredSearchSpec {
  /** The key of the result list in MLflow's answer, e.g. `experiments`. */
  readonly itemsKey: string;
  /** MLflow's default `max_results` for this search. */
  readonly defaultMaxResults: number;
  /** The largest page flowgate asks MLflow for while refilling (MLflow's own cap for this call). */
  readonly maxPageSize: number;
}

/** Upstream pages fetched for one client page before answering with what was found so far. */
const MAX_UPSTREAM_PAGES = 50;

/**
 * Runs a search against MLflow page by page, keeping only what `readable` accepts, until the client's
 * page is full or MLflow has no more. Returns MLflow's answer shape with flowgate's page token.
 */
export async function filteredSearch(
  spec: FilteredSearchSpec,
  upstream: UpstreamJson,
  method: 'GET' | 'POST',
  path: string,
  input: Record<string, unknown>,
  readable: (items: readonly unknown[]) => boolean[] | Promise<boolean[]>,
  context?: CallContext,
): Promise<UpstreamAnswer> {
  const requested = input.max_results === undefined ? spec.defaultMaxResults : Number(input.max_results);
  if (!Number.isInteger(requested) || requested < 1) throw badRequest(`Invalid value for max_results: ${String(input.max_results)}`);
  const resume = decodePageToken(input.page_token);
  const pageSize = resume?.pageSize ?? Math.min(Math.max(requested, 100), spec.maxPageSize);
  let upstreamToken = resume?.upstreamToken;
  let skip = resume?.skip ?? 0;
  const out: unknown[] = [];

  for (let pages = 0; pages < MAX_UPSTREAM_PAGES; pages++) {
    const { status, json, raw } = await upstream.call(method, path, {
      ...input,
      max_results: pageSize,
      page_token: upstreamToken,
    }, context);
    if (status !== 200) return { status, json };
    const answer = (json ?? {}) as Record<string, unknown>;
    const items = Array.isArray(answer[spec.itemsKey]) ? (answer[spec.itemsKey] as unknown[]) : [];
    const nextUpstream = typeof answer.next_page_token === 'string' && answer.next_page_token ? answer.next_page_token : undefined;
    const window = items.slice(skip);
    const judged = readable(window);
    const verdicts = judged instanceof Promise ? await judged : judged;
    // A first page whose every item may be shown, with nothing to page on, would be written out
    // again exactly as MLflow sent it: its bytes go out as they are.
    const asMlflowSentIt =
      raw !== undefined && pages === 0 && !resume && nextUpstream === undefined && items.length > 0 && items.length <= requested;
    if (asMlflowSentIt && onlyKey(answer, spec.itemsKey) && verdicts.every(Boolean)) return { status, json: answer, raw };
    for (let i = 0; i < window.length; i++) {
      if (!verdicts[i]) continue;
      out.push(window[i]);
      if (out.length === requested) {
        const consumed = skip + i + 1;
        // Look ahead in what was already fetched, so a last page is not followed by an empty one.
        const moreHere = verdicts.slice(i + 1).some(Boolean);
        const token = moreHere
          ? encodePageToken({ upstreamToken, skip: consumed, pageSize })
          : nextUpstream !== undefined
            ? encodePageToken({ upstreamToken: nextUpstream, skip: 0, pageSize })
            : undefined;
        return { status: 200, json: { [spec.itemsKey]: out, ...(token ? { next_page_token: token } : {}) } };
      }
    }
    if (!nextUpstream) return { status: 200, json: out.length ? { [spec.itemsKey]: out } : {} };
    if (items.length === 0 && nextUpstream === upstreamToken) throw new FlowgateError('BAD_GATEWAY', 'MLflow paging did not advance');
    upstreamToken = nextUpstream;
    skip = 0;
  }
  return {
    status: 200,
    json: { [spec.itemsKey]: out, next_page_token: encodePageToken({ upstreamToken, skip: 0, pageSize }) },
  };
}

function onlyKey(answer: Record<string, unknown>, key: string): boolean {
  for (const k in answer) if (k !== key) return false;
  return true;
}
