import type { AfterHook, ResourceRef } from '../../authz/types.js';
import { PROMPT_TAG } from '../../authz/mlflow-lookups.js';
import { experimentRef } from '../../authz/resolve.js';
import { EXPERIMENT, MCP_SERVER, modelKind, SKILL } from '../../resources/kinds.js';
import { organizationProblem, skillId, skillNameProblem } from '../../resources/skill-identity.js';
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

/** The experiment an item names, with its name when the item gives one (pattern grants then match without a look-up). */
const experiment = (id: string | undefined, name?: unknown): ResourceRef[] =>
  id ? [typeof name === 'string' ? { kind: EXPERIMENT, id, name } : experimentRef(id)] : [];

/** The MCP server an item names (no name: no resource, so the item is dropped). */
const mcpServer = (name: unknown): ResourceRef[] => (typeof name === 'string' && name !== '' ? [{ kind: MCP_SERVER, id: name }] : []);

/** The registered model or prompt an item names, as its prompt flag says. */
const model = (name: string | undefined, isPrompt: boolean): ResourceRef[] => (name ? [{ kind: modelKind(isPrompt), id: name }] : []);

/** The Skill an item names (its organization and name, as MLflow answers them); none when they are not a Skill's. */
function skill(item: unknown): ResourceRef[] {
  const { name, organization = '' } = obj(item);
  if (skillNameProblem(name) !== undefined || organizationProblem(organization) !== undefined) return [];
  return [{ kind: SKILL, id: skillId({ organization: organization as string, name: name as string }) }];
}

/** How each filtered search reads its answer; an item with no resolvable resource is dropped. */
export const SEARCH_KINDS: Partial<Record<AfterHook, SearchKind>> = {
  filter_search_experiments: {
    itemsKey: 'experiments',
    maxResults: 50_000, // MLflow's SEARCH_MAX_RESULTS_THRESHOLD
    offsetTokens: true,
    defaultMaxResults: 1000,
    maxPageSize: 1000,
    // MLflow's answer names each experiment: pattern grants are matched without a look-up.
    refsOf: (item) => experiment(str(obj(item).experiment_id), obj(item).name),
  },
  filter_search_registered_models: {
    itemsKey: 'registered_models',
    maxResults: 1000, // SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD
    offsetTokens: true,
    defaultMaxResults: 100,
    maxPageSize: 1000,
    refsOf: (item) => model(str(obj(item).name), taggedPrompt(obj(item).tags)),
  },
  filter_search_model_versions: {
    itemsKey: 'model_versions',
    maxResults: 200_000, // SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD
    offsetTokens: true,
    defaultMaxResults: 10_000,
    maxPageSize: 10_000,
    refsOf: async (item, isPrompt) => {
      const name = str(obj(item).name);
      return name ? model(name, await isPrompt(name)) : [];
    },
  },
  filter_search_logged_models: {
    itemsKey: 'models',
    maxResults: 50_000, // MLflow sets none: its other tracking searches' SEARCH_MAX_RESULTS_THRESHOLD
    defaultMaxResults: 100,
    maxPageSize: 100,
    upstreamTokenRepeatsQuery: true,
    refsOf: (item) => experiment(str(obj(obj(item).info).experiment_id)),
  },
  // MLflow 3.18's Skill search (GET, JSON): 100 by default, at most 1000, its token repeating the filter and order.
  filter_search_skills: {
    itemsKey: 'skills',
    maxResults: 1000,
    defaultMaxResults: 100,
    maxPageSize: 1000,
    upstreamTokenRepeatsQuery: true,
    answersEmptyList: true,
    refsOf: skill,
  },
  // MLflow's MCP server registry (GET, JSON, offset tokens): 100 by default, at most 1000 a page.
  filter_search_mcp_servers: {
    itemsKey: 'mcp_servers',
    maxResults: 1000, // SEARCH_MCP_SERVER_MAX_RESULTS_THRESHOLD
    offsetTokens: true,
    defaultMaxResults: 100,
    maxPageSize: 1000,
    answersEmptyList: true,
    refsOf: (item) => mcpServer(obj(item).name),
  },
  // Every server's access endpoints: each one is its server's to read.
  filter_search_mcp_endpoints: {
    itemsKey: 'mcp_access_endpoints',
    maxResults: 50_000, // SEARCH_MAX_RESULTS_THRESHOLD
    defaultMaxResults: 100,
    maxPageSize: 1000,
    answersEmptyList: true,
    refsOf: (item) => mcpServer(obj(item).server_name),
  },
};
