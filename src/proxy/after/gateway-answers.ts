import { GATEWAY_ENDPOINT, GATEWAY_MODEL_DEFINITION, GATEWAY_SECRET } from '../../resources/kinds.js';
import type { ResourceNeed } from '../../resources/permissions.js';
import type { GatewayKind } from '../../resources/kinds.js';

/**
 * Whether the caller may read (or use) an AI-gateway object an answer names: by the name MLflow's
 * answer gives, else by its generated id (looked up). An object that cannot be told is not shown.
 */
export type GatewayJudge = (kind: GatewayKind, name: unknown, id: unknown) => Promise<boolean>;

export interface GatewayJudgeDeps {
  /** The caller's decision on one object, by name. */
  readonly decide: (need: ResourceNeed, kind: GatewayKind, name: string) => boolean | Promise<boolean>;
  /** A generated id's name (cached look-up). */
  readonly nameOf: (kind: GatewayKind, id: string) => Promise<string>;
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** One judge per answer: each object is decided once however often the answer names it. */
export function gatewayJudge(deps: GatewayJudgeDeps, need: ResourceNeed): GatewayJudge {
  const decided = new Map<string, Promise<boolean>>();
  return (kind, name, id) => {
    const byName = text(name);
    const byId = text(id);
    if (byName === undefined && byId === undefined) return Promise.resolve(false);
    const key = `${kind}\u0000${byName === undefined ? `id\u0000${byId}` : `name\u0000${byName}`}`;
    let verdict = decided.get(key);
    if (verdict === undefined) {
      verdict = (async () => deps.decide(need, kind, byName ?? (await deps.nameOf(kind, byId!))))().catch(() => false);
      decided.set(key, verdict);
    }
    return verdict;
  };
}

/** A model definition's secret the caller may not read is withheld (its id and name), as MLflow does. */
async function withholdSecret(definition: Record<string, unknown>, may: GatewayJudge): Promise<void> {
  if (definition.secret_id === undefined && definition.secret_name === undefined) return;
  if (await may(GATEWAY_SECRET, definition.secret_name, definition.secret_id)) return;
  delete definition.secret_id;
  delete definition.secret_name;
}

/**
 * An endpoint's model mappings: a model definition the caller may not read is withheld whole (it and
 * its id), and a readable one's secret as above: MLflow's `_withhold_denied_model_mappings`.
 */
async function withholdMappings(mappings: unknown, may: GatewayJudge): Promise<void> {
  if (!Array.isArray(mappings)) return;
  await Promise.all(
    mappings.map(async (item) => {
      const mapping = obj(item);
      const definition = obj(mapping.model_definition);
      if (mapping.model_definition === undefined && mapping.model_definition_id === undefined) return;
      if (!(await may(GATEWAY_MODEL_DEFINITION, definition.name, mapping.model_definition_id ?? definition.model_definition_id))) {
        delete mapping.model_definition;
        delete mapping.model_definition_id;
        return;
      }
      if (mapping.model_definition !== undefined) await withholdSecret(definition, may);
    }),
  );
}

/**
 * What one gateway answer (a get, create, update or attach) may show the caller: the model definitions
 * and secrets it embeds that they may not read are withheld. The answer is changed in place.
 */
export async function withholdInAnswer(json: unknown, may: GatewayJudge): Promise<void> {
  const answer = obj(json);
  if (answer.model_definition !== undefined) await withholdSecret(obj(answer.model_definition), may);
  if (answer.endpoint !== undefined) await withholdMappings(obj(answer.endpoint).model_mappings, may);
  if (answer.mapping !== undefined) await withholdMappings([answer.mapping], may);
}

/** A gateway list: its rows' key in MLflow's answer, their kind, what a caller needs to see one, and its name. */
export interface GatewayList {
  readonly key: string;
  readonly kind: GatewayKind;
  readonly need: ResourceNeed;
  readonly nameOf: (row: Record<string, unknown>) => { readonly name: unknown; readonly id: unknown };
}

export const GATEWAY_LISTS: Readonly<Record<string, GatewayList>> = {
  'secrets/list': { key: 'secrets', kind: GATEWAY_SECRET, need: 'read', nameOf: (r) => ({ name: r.secret_name, id: r.secret_id }) },
  'model-definitions/list': { key: 'model_definitions', kind: GATEWAY_MODEL_DEFINITION, need: 'read', nameOf: (r) => ({ name: r.name, id: r.model_definition_id }) },
  'endpoints/list': { key: 'endpoints', kind: GATEWAY_ENDPOINT, need: 'read', nameOf: (r) => ({ name: r.name, id: r.endpoint_id }) },
  // The OpenAI-style model list: each row's `id` is an endpoint's name; it shows the ones the caller may invoke (MLflow's rule).
  'v1/models': { key: 'data', kind: GATEWAY_ENDPOINT, need: 'use', nameOf: (r) => ({ name: r.id, id: undefined }) },
};

/** The list a route answers, by the end of its path. */
export function gatewayListOf(pattern: string): GatewayList | undefined {
  const found = Object.keys(GATEWAY_LISTS).find((suffix) => pattern.endsWith(`/${suffix}`));
  return found === undefined ? undefined : GATEWAY_LISTS[found];
}

/**
 * A list keeps the rows the caller may see (`list.need` on each), and in them withholds what the
 * caller may not read. Rows whose name cannot be told are left out.
 */
export async function filterGatewayList(json: unknown, list: GatewayList, mayList: GatewayJudge, mayRead: GatewayJudge): Promise<void> {
  const answer = obj(json);
  const rows = answer[list.key];
  if (!Array.isArray(rows)) return;
  const keep = await Promise.all(
    rows.map((row) => {
      const { name, id } = list.nameOf(obj(row));
      return mayList(list.kind, name, id);
    }),
  );
  const kept = rows.filter((_, i) => keep[i]);
  // MLflow's protobuf JSON leaves an empty list out; the OpenAI-style list keeps `data: []`.
  if (kept.length > 0 || list.key === 'data') answer[list.key] = kept;
  else delete answer[list.key];
  await Promise.all(
    kept.map(async (row) => {
      if (list.kind === GATEWAY_MODEL_DEFINITION) await withholdSecret(obj(row), mayRead);
      if (list.kind === GATEWAY_ENDPOINT && list.need === 'read') await withholdMappings(obj(row).model_mappings, mayRead);
    }),
  );
}
