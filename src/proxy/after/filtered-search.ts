import { badRequest, FlowgateError } from '../../errors.js';
import { pageTokensFor } from './page-token.js';
import type { PageTokenSealer } from './page-token-sealer.js';
import type { CallContext, UpstreamAnswer, UpstreamJson } from '../../upstream/json-client.js';
import { jsonCopy } from '../json-copy.js';
import { errorFieldsOnly, unexpectedSuccess } from './rewrite-json.js';

export interface FilteredSearchSpec {
  /** The key of the result list in MLflow's answer, e.g. `experiments`. */
  readonly itemsKey: string;
  /** MLflow's default `max_results` for this search. */
  readonly defaultMaxResults: number;
  /**
   * The largest `max_results` a client may ask for: MLflow's own cap for this search (flowgate asks MLflow
   * for its own page sizes, so MLflow's check would never see the client's value).
   */
  readonly maxResults: number;
  /** The largest page flowgate asks MLflow for while refilling (MLflow's own cap for this call). */
  readonly maxPageSize: number;
  /** MLflow's page token for this search repeats the search's parameters (so its length follows them). */
  readonly upstreamTokenRepeatsQuery?: boolean;
  /** MLflow answers an empty list as `[]` rather than leaving it out (its JSON API, not a protobuf one): so does flowgate. */
  readonly answersEmptyList?: boolean;
  /** MLflow's page token for this search is an offset alone, so consecutive pages may differ in size. */
  readonly offsetTokens?: boolean;
}

/** One caller's search, as the gate read it. */
export interface FilteredSearchCall {
  readonly method: 'GET' | 'POST';
  readonly path: string;
  readonly input: Record<string, unknown>;
  /** Whom the page tokens are sealed for. */
  readonly username: string;
  readonly readable: (items: readonly unknown[]) => boolean[] | Promise<boolean[]>;
  readonly context?: CallContext;
}

/**
 * MLflow pages fetched for one client page. Reaching it fails the request rather than answering a
 * short page (whose size would tell how many hidden items were passed over); only a search passing
 * over this many pages of items the caller cannot see meets it.
 */
const MAX_UPSTREAM_PAGES = 1000;
/** How much larger each refill's MLflow page is than the one before (searches with offset tokens). */
const REFILL_GROWTH = 4;

/**
 * Runs a search against MLflow page by page, keeping only what `readable` accepts, until the client's
 * page is full and the next readable item is found, or MLflow has no more. Nothing in the answer
 * depends on the items the caller cannot see: a page holds `max_results` readable items or all that
 * are left; it carries a (sealed, fixed-length) token exactly when a readable item follows, and the
 * token points at that item.
 */
export async function filteredSearch(
  spec: FilteredSearchSpec,
  upstream: UpstreamJson,
  sealer: PageTokenSealer,
  call: FilteredSearchCall,
): Promise<UpstreamAnswer> {
  const { method, path, input, readable, context } = call;
  const requested = input.max_results === undefined ? spec.defaultMaxResults : Number(input.max_results);
  if (!Number.isInteger(requested) || requested < 1) throw badRequest(`Invalid value for max_results: ${String(input.max_results)}`);
  if (requested > spec.maxResults) throw badRequest(`Invalid value ${requested} for parameter 'max_results' supplied. It must be at most ${spec.maxResults}`);
  const tokens = pageTokensFor(sealer, {
    username: call.username,
    route: `${method} ${path}`,
    params: input,
    upstreamTokenRepeatsQuery: spec.upstreamTokenRepeatsQuery ?? false,
  });
  const resume = tokens.decode(input.page_token);
  // Where MLflow's tokens are offsets, its first page holds one item more than the client's page: when
  // the caller may read them all, that one page answers and shows whether a readable item follows.
  // Refills grow to the size every page has otherwise (at least 100: few calls past hidden items).
  const fullSize = Math.min(Math.max(requested, 100), spec.maxPageSize);
  let pageSize = resume?.pageSize ?? (spec.offsetTokens ? Math.min(requested + 1, fullSize) : fullSize);
  let upstreamToken = resume?.upstreamToken;
  let skip = resume?.skip ?? 0;
  const out: unknown[] = [];

  for (let pages = 0; pages < MAX_UPSTREAM_PAGES; pages++) {
    const { status, json } = await upstream.call(method, path, jsonCopy(input, { max_results: pageSize, page_token: upstreamToken }), context);
    if (status !== 200) {
      // Rows in another status's body would reach the caller unfiltered.
      if (status >= 200 && status < 300) throw unexpectedSuccess(status);
      return { status, json: errorFieldsOnly(status, json) };
    }
    const answer = (json ?? {}) as Record<string, unknown>;
    const items = Array.isArray(answer[spec.itemsKey]) ? (answer[spec.itemsKey] as unknown[]) : [];
    const nextUpstream = typeof answer.next_page_token === 'string' && answer.next_page_token ? answer.next_page_token : undefined;
    const window = items.slice(skip);
    const judged = readable(window);
    const verdicts = judged instanceof Promise ? await judged : judged;
    for (let i = 0; i < window.length; i++) {
      if (!verdicts[i]) continue;
      if (out.length === requested) {
        // The page is full and a readable item follows: the token resumes at that very item.
        const token = tokens.encode({ upstreamToken, skip: skip + i, pageSize });
        return { status: 200, json: { [spec.itemsKey]: out, next_page_token: token } };
      }
      out.push(window[i]);
    }
    if (!nextUpstream) return { status: 200, json: out.length || spec.answersEmptyList ? { [spec.itemsKey]: out } : {} };
    if (items.length === 0 && nextUpstream === upstreamToken) throw new FlowgateError('BAD_GATEWAY', 'MLflow paging did not advance');
    upstreamToken = nextUpstream;
    skip = 0;
    if (spec.offsetTokens) pageSize = Math.min(fullSize, pageSize * REFILL_GROWTH);
  }
  // Not a status clients retry: the same search would meet the same limit.
  throw new FlowgateError('REQUEST_LIMIT_EXCEEDED', 'The search passed over too many results without filling the page; narrow its filter');
}
