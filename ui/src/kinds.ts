import { api, mlflow, qs, seg, type GrantIdField, type KindGrant } from './api';
import { grantIdField, isGateway, isMcpServer, isPrompt, isScorer, isSkill, isWorkspace, listingOf, numbered, type GatewayShown, type Kind } from './kind-list';
import { parseSkillId, skillId } from '../../src/resources/skill-identity.js';
import { adminIdSegments, idOfGrantJson, KINDS as SPECS } from '../../src/resources/kinds.js';

/** The kinds of resource the screens manage, and how MLflow's own API lists them. */
export { creatable, FIRST_ROUTE, grantIdField, isGateway, isMcpServer, isPrompt, isScorer, isSkill, isWorkspace, KINDS, kindOf, kindLabel, listingOf, lookupOf, numbered, permissionsFor, resourceText, type GatewayShown, type Kind } from './kind-list';

export interface Item {
  /** Experiment id, or the model's or prompt's name. */
  readonly id: string;
  readonly name: string;
}

/** MLflow's filter string quotes with ' ; a name search keeps the other characters. */
const like = (q: string) => `'%${q.replace(/['\\]/g, '')}%'`;

/** The tag that makes a registered model a prompt, to MLflow. */
export const PROMPT_TAG = 'mlflow.prompt.is_prompt';
const PROMPT_FILTER = `tags.\`${PROMPT_TAG}\` = 'true'`;

type Page = { items: Item[]; next_page_token?: string };

/** A gateway kind's rows as MLflow lists them through flowgate (what the viewer may read), all in one answer. */
async function gatewayRows(k: GatewayShown): Promise<ReadonlyArray<Readonly<Record<string, unknown>>>> {
  const { path, list } = listingOf(k);
  return (await mlflow<Record<string, ReadonlyArray<Readonly<Record<string, unknown>>> | undefined>>('GET', path))[list] ?? [];
}

/** MLflow lists a gateway kind whole: the search text filters its names and the pages are cut here (the token is the next offset). */
async function gatewayPage(k: GatewayShown, q: string, pageToken: string | undefined, max: number): Promise<Page> {
  const { nameField } = listingOf(k);
  const needle = q.toLowerCase();
  const names = (await gatewayRows(k))
    .map((row) => row[nameField])
    .filter((n): n is string => typeof n === 'string' && n.toLowerCase().includes(needle))
    .sort((a, b) => a.localeCompare(b));
  const start = Math.max(0, Number(pageToken ?? 0) || 0);
  const end = start + max;
  return { items: names.slice(start, end).map((n) => ({ id: n, name: n })), ...(end < names.length ? { next_page_token: String(end) } : {}) };
}

/** A gateway resource's id as MLflow's routes name it (`e-…`, `s-…`, `d-…`), from its list; undefined when the viewer may read none of that name. */
export async function generatedIdOf(k: Kind, name: string): Promise<string | undefined> {
  if (!isGateway(k)) return undefined;
  const { nameField, idField } = listingOf(k);
  const id = (await gatewayRows(k)).find((row) => row[nameField] === name)?.[idField];
  return typeof id === 'string' ? id : undefined;
}

const SKILLS = '/api/3.0/mlflow/skills';

/** MLflow's Skill search (its JSON API, by GET): each Skill shown by its id, `<name>` or `@<organization>/<name>`. */
async function skillPage(q: string, pageToken: string | undefined, max: number): Promise<Page> {
  const r = await mlflow<{ skills?: { name: string; organization?: string }[]; next_page_token?: string | null }>(
    'GET',
    `${SKILLS}${qs({ max_results: max, filter_string: q ? `name ILIKE ${like(q)}` : undefined, page_token: pageToken })}`,
  );
  const items = (r.skills ?? []).map((s) => skillId({ organization: s.organization ?? '', name: s.name })).map((id) => ({ id, name: id }));
  return { items, ...(r.next_page_token ? { next_page_token: r.next_page_token } : {}) };
}

const MCP_SERVERS = '/api/3.0/mlflow/mcp-servers';

/** MLflow's MCP server search (its JSON API, by GET): the servers the viewer may read, by name. */
async function mcpServerPage(q: string, pageToken: string | undefined, max: number): Promise<Page> {
  const r = await mlflow<{ mcp_servers?: { name: string }[]; next_page_token?: string | null }>(
    'GET',
    `${MCP_SERVERS}${qs({ max_results: max, order_by: 'name ASC', filter_string: q ? `name ILIKE ${like(q)}` : undefined, page_token: pageToken })}`,
  );
  const items = (r.mcp_servers ?? []).map((s) => ({ id: s.name, name: s.name }));
  return { items, ...(r.next_page_token ? { next_page_token: r.next_page_token } : {}) };
}

/**
 * Scorers, every experiment's (flowgate answers the ones the viewer may read, in experiments they may
 * read), each as `<experiment_id>/<name>`: MLflow lists them whole, so the search and the pages are cut here.
 */
async function scorerPage(q: string, pageToken: string | undefined, max: number): Promise<Page> {
  const r = await mlflow<{ scorers?: { experiment_id: string | number; scorer_name: string }[] }>('GET', '/api/3.0/mlflow/scorers/list');
  const needle = q.toLowerCase();
  const ids = [...new Set((r.scorers ?? []).map((s) => `${s.experiment_id}/${s.scorer_name}`))]
    .filter((id) => id.toLowerCase().includes(needle))
    .sort((a, b) => a.localeCompare(b));
  const start = Math.max(0, Number(pageToken ?? 0) || 0);
  const end = start + max;
  return { items: ids.slice(start, end).map((id) => ({ id, name: id })), ...(end < ids.length ? { next_page_token: String(end) } : {}) };
}

/** MLflow's workspaces (flowgate lists the viewer's own): one answer holds them all, so the search and pages are cut here. */
async function workspacePage(q: string, pageToken: string | undefined, max: number): Promise<Page> {
  const r = await mlflow<{ workspaces?: { name: string }[] }>('GET', '/api/3.0/mlflow/workspaces');
  const needle = q.toLowerCase();
  const names = (r.workspaces ?? []).map((w) => w.name).filter((n) => n.includes(needle)).sort((a, b) => a.localeCompare(b));
  const start = Math.max(0, Number(pageToken ?? 0) || 0);
  const end = start + max;
  return { items: names.slice(start, end).map((name) => ({ id: name, name })), ...(end < names.length ? { next_page_token: String(end) } : {}) };
}

async function experimentPage(q: string, pageToken: string | undefined, max: number): Promise<Page> {
  const r = await api<{ experiments?: { experiment_id: string; name: string }[]; next_page_token?: string }>('POST', 'experiments/search', {
    max_results: max,
    order_by: ['name ASC'],
    ...(q ? { filter: `name ILIKE ${like(q)}` } : {}),
    ...(pageToken ? { page_token: pageToken } : {}),
  });
  return { items: (r.experiments ?? []).map((e) => ({ id: e.experiment_id, name: e.name })), next_page_token: r.next_page_token };
}

async function registeredModelPage(k: Kind, q: string, pageToken: string | undefined, max: number): Promise<Page> {
  const filters = [...(q ? [`name ILIKE ${like(q)}`] : []), ...(isPrompt(k) ? [PROMPT_FILTER] : [])];
  const r = await api<{ registered_models?: { name: string }[]; next_page_token?: string }>(
    'GET',
    `registered-models/search${qs({ max_results: max, order_by: 'name ASC', filter: filters.join(' AND '), page_token: pageToken })}`,
  );
  return { items: (r.registered_models ?? []).map((m) => ({ id: m.name, name: m.name })), next_page_token: r.next_page_token };
}

/**
 * One page of a search through flowgate (which already leaves out what the viewer may not read), by
 * what MLflow stores the kind as: a kind stored some new way does not compile until it is listed here.
 */
export async function searchItems(k: Kind, q: string, pageToken: string | undefined, max = 25): Promise<Page> {
  const stored = SPECS[k.kind].stored.as;
  switch (stored) {
    case 'experiment':
      return experimentPage(q, pageToken, max);
    case 'registered_model':
      return registeredModelPage(k, q, pageToken, max);
    case 'gateway':
      return gatewayPage(k as GatewayShown, q, pageToken, max);
    case 'skill':
      return skillPage(q, pageToken, max);
    case 'scorer':
      return scorerPage(q, pageToken, max);
    case 'mcp_server':
      return mcpServerPage(q, pageToken, max);
    case 'workspace':
      return workspacePage(q, pageToken, max);
    default: {
      const unlisted: never = stored;
      throw new Error(`no listing for resources stored as ${String(unlisted)}`);
    }
  }
}

export async function itemName(k: Kind, id: string): Promise<string> {
  if (!numbered(k)) return id;
  const r = await api<{ experiment: { name: string } }>('GET', `experiments/get${qs({ experiment_id: id })}`);
  return r.experiment.name;
}

/**
 * Creates one through MLflow's API behind flowgate (the creator gets MANAGE); answers its id, for
 * grants. A prompt is a registered model with the prompt tag.
 */
export async function createItem(k: Kind, name: string): Promise<string> {
  if (isGateway(k)) throw new Error(`A ${k.one} is created on MLflow's AI Gateway page (it takes secret values)`);
  if (isScorer(k)) throw new Error(`A ${k.one} is registered by MLflow's clients (it takes its definition)`);
  if (isWorkspace(k)) throw new Error(`A ${k.one} is created by MLflow's administrators, in MLflow's own UI`);
  if (numbered(k)) return (await api<{ experiment_id: string }>('POST', 'experiments/create', { name })).experiment_id;
  if (isSkill(k)) {
    // `<name>`, or `@<organization>/<name>` for one in an organization (MLflow refuses any other spelling).
    const identity = parseSkillId(name) ?? { organization: '', name };
    const made = await mlflow<{ name: string; organization?: string }>('POST', SKILLS, identity);
    return skillId({ organization: made.organization ?? '', name: made.name });
  }
  // `<namespace>/<slug>`; its versions are published with MLflow's own clients.
  if (isMcpServer(k)) return (await mlflow<{ name: string }>('POST', MCP_SERVERS, { name })).name;
  const tags = isPrompt(k) ? [{ key: PROMPT_TAG, value: 'true' }] : [];
  await api('POST', 'registered-models/create', { name, tags });
  return name;
}

export type GranteeSegment = 'users' | 'groups';

export const grantPath = (granteeSegment: GranteeSegment, name: string, k: Kind, id: string) =>
  `permissions/${granteeSegment}/${seg(name)}/${k.segment}/${adminIdSegments(k.kind, id)}`;

/** The resource a grant is on: its id, under the kind's own field of the grant JSON. */
export function grantIdOf(k: Kind, g: KindGrant): string {
  // A scorer's grant names its experiment and its name, each under its own field.
  if (isScorer(k)) return idOfGrantJson(k.kind, g);
  const ids: Partial<Readonly<Record<GrantIdField, string>>> = g;
  return ids[grantIdField(k)] ?? '';
}
