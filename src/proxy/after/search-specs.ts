import type { AfterHook, ResourceRef } from '../../authz/types.js';
import { PROMPT_TAG } from '../../authz/mlflow-lookups.js';
import { modelKind } from '../../resources/kinds.js';
import type { FilteredSearchSpec } from './filtered-search.js';

export interface SearchKind extends FilteredSearchSpec {
  /**
   * The resources an item of the answer belongs to; `isPrompt` answers for model names. Synchronous
   * when the item itself says (a page of experiments is judged without a promise per item).
   */
  refsOf(item: unknown, isPrompt: (name: string) => Promise<boolean>): ResourceRef[] | Promise<ResourceRef[]>;
}

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);

function taggedPrompt(tags: unknown): boolean {
  return Array.isArray(tags) && tags.some((t) => obj(t).key === PROMPT_TAG && String(obj(t).value).toLowerCase() === 'true');
}

const experiment = (id: string | undefined): ResourceRef[] => (id ? [{ kind: 'experiment', id }] : []);

/** How each filtered search reads its answer; an item with no resolvable resource is dropped. */
export const SEARCH_KINDS: Partial<Record<AfterHook, SearchKind>> = {
  filter_search_experiments: {
    itemsKey: 'experiments',
    defaultMaxResults: 1000,
    maxPageSize: 1000,
    // MLflow's answer names each experiment: pattern grants are matched without a look-up.
    refsOf: (item) => {
      const id = str(obj(item).experiment_id);
      const name = obj(item).name;
      return id && typeof name === 'string' ? [{ kind: 'experiment', id, name }] : experiment(id);
    },
  },
  filter_search_registered_models: {
    itemsKey: 'registered_models',
    defaultMaxResults: 100,
    maxPageSize: 1000,
    refsOf: (item) => {
      const name = str(obj(item).name);
      return name ? [{ kind: modelKind(taggedPrompt(obj(item).tags)), id: name }] : [];
    },
  },
  filter_search_model_versions: {
    itemsKey: 'model_versions',
    defaultMaxResults: 10_000,
    maxPageSize: 10_000,
    refsOf: async (item, isPrompt) => {
      const name = str(obj(item).name);
      return name ? [{ kind: modelKind(await isPrompt(name)), id: name }] : [];
    },
  },
  filter_search_logged_models: {
    itemsKey: 'models',
    defaultMaxResults: 100,
    maxPageSize: 100,
    upstreamTokenRepeatsQuery: true,
    refsOf: (item) => experiment(str(obj(obj(item).info).experiment_id)),
  },
};
