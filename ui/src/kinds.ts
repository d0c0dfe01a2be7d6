import { api, qs, seg } from './api';
import type { Kind } from './kind-list';

/** The kinds of resource the screens manage, and how MLflow's own API lists them. */
export { KINDS, kindOf, kindLabel, resourceText, type Kind } from './kind-list';

export interface Item {
  /** Experiment id, or the model's or prompt's name. */
  readonly id: string;
  readonly name: string;
}

/** MLflow's filter string quotes with ' ; a name search keeps the other characters. */
const like = (q: string) => `'%${q.replace(/['\\]/g, '')}%'`;
const PROMPT_TAG = "tags.`mlflow.prompt.is_prompt` = 'true'";

/** One page of a search through flowgate (which already leaves out what the viewer may not read). */
export async function searchItems(k: Kind, q: string, pageToken: string | undefined, max = 25): Promise<{ items: Item[]; next?: string }> {
  if (k.route === 'experiments') {
    const r = await api<{ experiments?: { experiment_id: string; name: string }[]; next_page_token?: string }>('POST', 'experiments/search', {
      max_results: max,
      order_by: ['name ASC'],
      ...(q ? { filter: `name ILIKE ${like(q)}` } : {}),
      ...(pageToken ? { page_token: pageToken } : {}),
    });
    return { items: (r.experiments ?? []).map((e) => ({ id: e.experiment_id, name: e.name })), next: r.next_page_token };
  }
  const filters = [...(q ? [`name ILIKE ${like(q)}`] : []), ...(k.route === 'prompts' ? [PROMPT_TAG] : [])];
  const r = await api<{ registered_models?: { name: string }[]; next_page_token?: string }>(
    'GET',
    `registered-models/search${qs({ max_results: max, order_by: 'name ASC', filter: filters.join(' AND '), page_token: pageToken })}`,
  );
  return { items: (r.registered_models ?? []).map((m) => ({ id: m.name, name: m.name })), next: r.next_page_token };
}

export async function itemName(k: Kind, id: string): Promise<string> {
  if (k.route !== 'experiments') return id;
  const r = await api<{ experiment: { name: string } }>('GET', `experiments/get${qs({ experiment_id: id })}`);
  return r.experiment.name;
}

export const grantPath = (granteeSegment: 'users' | 'groups', name: string, k: Kind, id: string) =>
  `permissions/${granteeSegment}/${seg(name)}/${k.segment}/${seg(id)}`;
