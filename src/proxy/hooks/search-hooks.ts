import { experimentRef } from '../../authz/resolve.js';
import type { ResourceRef } from '../../authz/types.js';
import { badRequest, sendJson, sendJsonText } from '../../errors.js';
import { filteredSearch } from '../after/filtered-search.js';
import { listedExperimentId, listedExperiments, narrowedRequest, refuseCamelTwins, type ExperimentList } from '../after/narrow-experiments.js';
import { SEARCH_KINDS, type SearchKind } from '../after/search-specs.js';
import { canRead, obj, type Hook, type HookCall, type HookContext } from './types.js';
import type { GatePass } from '../gate.js';
import { jsonCopy } from '../json-copy.js';

const nothingFound: Hook = () => ({ respond: (res) => Promise.resolve(sendJson(res, 200, {})) });

/** Runs and traces: the experiments searched are narrowed to the readable ones before MLflow sees them. */
export const narrowToReadableExperiments: Hook = async (call, ctx) => {
  const { entry, principal, request, hook } = call;
  const where: ExperimentList =
    hook === 'filter_search_runs'
      ? { in: 'body', shape: 'experiment_ids' }
      : entry.method === 'GET'
        ? { in: 'query', field: 'experiment_ids' }
        : { in: 'body', shape: 'trace_locations' };
  const listed = listedExperiments(where, request.body, request.query);
  const readable = await Promise.all(listed.map((id) => canRead(ctx, principal, [experimentRef(id)])));
  const keep = new Set(listed.filter((_, i) => readable[i]));
  if (keep.size === 0) return nothingFound(call, ctx);
  return narrowedRequest(where, request.body, request.query, keep);
};

/** The fields a filtered search's body gives that flowgate rewrites before MLflow sees them. */
const PAGING_FIELDS = ['max_results', 'page_token'] as const;
const LOGGED_MODEL_FIELDS = [...PAGING_FIELDS, 'experiment_ids'] as const;

/** Experiments, models, versions, logged models: flowgate pages through MLflow's results and answers with the readable ones. */
export const filterSearchAnswer: Hook = (call, ctx) => searchAnswer(SEARCH_KINDS[call.hook]!, call, ctx);

async function searchAnswer(kind: SearchKind, call: HookCall, ctx: HookContext): Promise<Partial<GatePass>> {
  const { entry, principal, request, hook } = call;
  const method = entry.method === 'GET' ? 'GET' : 'POST';
  const input: Record<string, unknown> =
    method === 'GET'
      ? Object.fromEntries(
          [...new Set(request.query.keys())].map((k) => {
            const all = request.query.getAll(k);
            return [k, all.length > 1 ? all : all[0]];
          }),
        )
      : jsonCopy(obj(request.body));
  // flowgate sets the page size and token MLflow gets (and narrows a logged-model search's experiments):
  // a camelCase twin in a body would reach MLflow beside them (protobuf JSON reads both spellings).
  if (method === 'POST') refuseCamelTwins(input, hook === 'filter_search_logged_models' ? LOGGED_MODEL_FIELDS : PAGING_FIELDS);
  if (hook === 'filter_search_logged_models' && input.experiment_ids !== undefined) {
    if (!Array.isArray(input.experiment_ids)) throw badRequest("'experiment_ids' must be a list");
    const ids = input.experiment_ids as unknown[];
    const listed = ids.map((id) => listedExperimentId(id, 'experiment_ids'));
    const readable = await Promise.all(listed.map((id) => canRead(ctx, principal, [experimentRef(id)])));
    input.experiment_ids = ids.filter((_, i) => readable[i]);
    if ((input.experiment_ids as unknown[]).length === 0) return nothingFound(call, ctx);
  }
  const isPrompt = (name: string) => ctx.lookups.isPrompt(name);
  // An item whose resources or permission cannot be told is not shown.
  const mayRead = (refs: ResourceRef[]): boolean | Promise<boolean> => {
    try {
      const verdict = canRead(ctx, principal, refs);
      return verdict instanceof Promise ? verdict.catch(() => false) : verdict;
    } catch {
      return false;
    }
  };
  const readable = (items: readonly unknown[]): boolean[] | Promise<boolean[]> => {
    const verdicts: Array<boolean | Promise<boolean>> = [];
    let waiting = false;
    for (const item of items) {
      let refs: ResourceRef[] | Promise<ResourceRef[]>;
      try {
        refs = kind.refsOf(item, isPrompt);
      } catch {
        refs = [];
      }
      const verdict = refs instanceof Promise ? refs.then(mayRead, () => false) : mayRead(refs);
      if (verdict instanceof Promise) waiting = true;
      verdicts.push(verdict);
    }
    return waiting ? Promise.all(verdicts) : (verdicts as boolean[]);
  };
  return {
    respond: async (res, context) => {
      const { status, json, raw } = await filteredSearch(kind, ctx.upstream, ctx.pageTokens, {
        method,
        path: entry.pattern,
        input,
        username: principal.username,
        readable,
        context,
      });
      if (raw) sendJsonText(res, status, raw);
      else sendJson(res, status, json);
    },
  };
}

/**
 * MLflow's evaluation-dataset search: offset tokens, 1000 a page by default (its store's default, which
 * is also the largest page flowgate asks for).
 */
const DATASET_SEARCH: Omit<SearchKind, 'refsOf'> = { itemsKey: 'datasets', offsetTokens: true, defaultMaxResults: 1000, maxResults: 50_000, maxPageSize: 1000 };

/**
 * Datasets found in readable experiments may also belong to others: MLflow's rule asks READ on all of
 * them. flowgate pages through MLflow's results like any filtered search, so a page emptied of hidden
 * datasets or cut short by them (and its token) answers as if they did not exist.
 */
export const filterFoundDatasets: Hook = (call, ctx) =>
  searchAnswer(
    Object.assign({}, DATASET_SEARCH, {
      refsOf: async (item: unknown) => {
        const id = obj(item).dataset_id;
        if (typeof id !== 'string' || id === '') return [];
        return (await ctx.lookups.experimentsOfDataset(id)).map(experimentRef);
      },
    }),
    call,
    ctx,
  );
