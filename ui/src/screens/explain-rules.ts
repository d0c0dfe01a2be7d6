import type { GatewayKind } from '../../../src/resources/kinds.js';
import { REASON_SPECS } from '../../../src/resources/reasons.js';
import { qs, type ExplainedResource, type Explanation } from '../api';
import { generatedIdOf, isGateway, isMcpServer, isScorer, isSkill, isWorkspace, listingOf, lookupOf, numbered, type GatewayShown, type Kind } from '../kinds';
import { lookupCall } from '../../../src/resources/kinds.js';

/**
 * What "read", "use", "edit" and "manage" stand for on each kind: one real MLflow call of the route
 * catalog (src/authz/catalog.ts) that needs that permission, so the explanation is of a request a
 * client could send. Prompts are registered models to MLflow; flowgate tells them apart by their tag.
 * The gateway's kinds are explained for read and use: MLflow changes or deletes them by their
 * generated id only, and USE is their own level.
 */
export const ACTIONS = ['read', 'use', 'edit', 'manage'] as const;
export type Action = (typeof ACTIONS)[number];

/** The actions explained on a kind: USE only where the kind has it. */
export const actionsOf = (kind: Kind): readonly Action[] => ACTIONS.filter((a) => (isGateway(kind) ? a === 'read' || a === 'use' : a !== 'use'));

export interface Call {
  readonly method: string;
  /** From MLflow's root, with the query. */
  readonly target: string;
  readonly body?: Readonly<Record<string, unknown>>;
}

const V2 = '/api/2.0/mlflow';
const GATEWAY = '/api/3.0/mlflow/gateway';

/**
 * Using a gateway resource, as MLflow spends it: invoking an endpoint (named as the body's `model`),
 * building a model definition on a secret, an endpoint on a model definition (those two by the
 * generated id MLflow's routes take).
 */
const USE: { readonly [K in GatewayKind]: (name: string, generatedId: () => Promise<string>) => Promise<Call> } = {
  gateway_secret: async (_name, id) => ({ method: 'POST', target: `${GATEWAY}/model-definitions/create`, body: { secret_id: await id() } }),
  gateway_model_definition: async (_name, id) => ({
    method: 'POST',
    target: `${GATEWAY}/endpoints/create`,
    body: { model_configs: [{ model_definition_id: await id(), linkage_type: 'PRIMARY', weight: 1 }] },
  }),
  gateway_endpoint: async (name) => ({ method: 'POST', target: '/gateway/mlflow/v1/chat/completions', body: { model: name } }),
};

async function gatewayCall(kind: GatewayShown, name: string, action: Action): Promise<Call> {
  const generatedId = async () => {
    const id = await generatedIdOf(kind, name);
    if (id === undefined) throw new Error(`MLflow lists no ${kind.one} named “${name}” that you may read`);
    return id;
  };
  if (action === 'use') return USE[kind.kind](name, generatedId);
  if (action !== 'read') throw new Error(`Explain does not offer ${action} on a ${kind.one}`);
  // Reading one is the registry's look-up, by name where MLflow takes one, else by its generated id.
  const lookup = lookupOf(kind);
  if (lookup) return { method: 'GET', target: `${lookup.path}${qs({ [lookup.param]: name })}` };
  const { get, idField } = listingOf(kind);
  return { method: 'GET', target: `${get}${qs({ [idField]: await generatedId() })}` };
}

/** A Skill or an MCP server by its path (`…/skills/@<organization>/<name>`, `…/mcp-servers/<namespace>/<slug>`): get, update, delete. */
function skillCall(kind: Kind, id: string, action: Action): Call {
  const target = lookupCall(kind.kind, id)!.path;
  if (action === 'read') return { method: 'GET', target };
  if (action === 'edit') return { method: 'PATCH', target, body: {} };
  return { method: 'DELETE', target };
}

/**
 * A scorer (`<experiment_id>/<name>`): its get, its online scoring config (which also needs EDIT on the
 * experiment, where it writes assessments), its delete.
 */
function scorerCall(kind: Kind, id: string, action: Action): Call {
  const { path, query } = lookupCall(kind.kind, id)!;
  if (action === 'read') return { method: 'GET', target: `${path}${qs(query)}` };
  const scorers = path.replace(/\/get$/, '');
  if (action === 'edit') return { method: 'PUT', target: `${scorers}/online-config`, body: { ...query, sample_rate: 0 } };
  return { method: 'DELETE', target: `${scorers}/delete`, body: { ...query } };
}

/** The call standing for `action` on the resource (a gateway resource's generated id asked of MLflow's list where the call takes it). */
export async function callFor(kind: Kind, id: string, action: Action): Promise<Call> {
  if (isScorer(kind)) return scorerCall(kind, id, action);
  if (isGateway(kind)) return gatewayCall(kind, id, action);
  if (isSkill(kind) || isMcpServer(kind) || isWorkspace(kind)) return skillCall(kind, id, action);
  // Reading one is the registry's own look-up of it.
  const lookup = lookupOf(kind)!;
  if (action === 'read') return { method: 'GET', target: `${lookup.path}${qs({ [lookup.param]: id })}` };
  if (numbered(kind)) return { method: 'POST', target: `${V2}/experiments/${action === 'edit' ? 'update' : 'delete'}`, body: { experiment_id: id } };
  if (action === 'edit') return { method: 'PATCH', target: `${V2}/registered-models/update`, body: { name: id } };
  return { method: 'DELETE', target: `${V2}/registered-models/delete`, body: { name: id } };
}

export const ACTION_LABEL: Record<Action, string> = {
  read: 'Read (view it)',
  use: 'Use (invoke it, or build on it)',
  edit: 'Edit (change it)',
  manage: 'Manage (delete it, change who may use it)',
};

/** Which of the grants considered made the effective permission: `direct`, the names of groups, or `default`. */
export function decidingGrant(r: ExplainedResource): { direct: boolean; groups: ReadonlySet<string>; byDefault: boolean } {
  const groups = new Set<string>();
  if (r.rule === 'group-deny') for (const g of r.groups) if (g.permission === 'NO_PERMISSIONS') groups.add(g.group);
  if (r.rule === 'group-grant') for (const g of r.groups) if (g.permission === r.effective) groups.add(g.group);
  return { direct: r.rule === 'direct-grant', groups, byDefault: r.rule === 'default-permission' };
}

/**
 * The deciding rule in words, for the person reading the panel. A grant decides about the action asked
 * (using a secret is creating a model definition on it: the route creates, the secret's grant decides).
 */
export function ruleInWords(e: Explanation, kind: Kind, action: Action): string {
  const { username, verdict } = e;
  const need = action;
  const r = e.resources[0];
  const verb = verdict.allow ? 'permits' : 'does not permit';
  switch (verdict.reason) {
    case 'admin':
      return `${username} is an administrator: administrators may do everything.`;
    case 'direct-grant':
      return `${username}’s direct grant ${r?.direct ?? ''} on this ${kind.one} ${verb} ${need}; a direct grant wins over any group’s.`;
    case 'group-grant': {
      const groups = r ? [...decidingGrant(r).groups].join(', ') : '';
      return `No direct grant; the strongest grant of ${username}’s groups (${groups}: ${r?.effective ?? ''}) ${verb} ${need}.`;
    }
    case 'group-deny': {
      const groups = r ? [...decidingGrant(r).groups].join(', ') : '';
      return `No direct grant; group ${groups} holds NO_PERMISSIONS here, which denies whatever other groups grant.`;
    }
    case 'pattern-grant':
    case 'group-pattern-grant':
    case 'group-pattern-deny': {
      const p = r?.decidingPattern;
      const by = p ? `the pattern grant “${p.pattern}” (${p.grantee.replace(':', ' ')}: ${p.permission})` : 'a pattern grant';
      return `No grant on this ${kind.one} itself; ${by} matches its name and ${verb} ${need}${verdict.reason === 'group-pattern-deny' ? ', denying whatever other groups’ patterns grant' : ''}.`;
    }
    case 'default-permission':
      return `Neither ${username} nor any of their groups holds a grant here: the default permission${r ? ` ${r.effective}` : ''} ${verb} ${need}.`;
    case 'authenticated-route':
      return 'Anyone signed in may make this call (its answer is filtered to what they may read).';
    case 'public-route':
      return 'Anyone may make this call.';
    case 'admin-only-route':
      return 'Only administrators may make this call.';
    case 'route-not-found':
      return 'flowgate does not know this call and denies it.';
    case 'create-open':
      return `Anyone signed in may create here${verdict.checks.length > 1 ? ', and every further check (below) allowed it' : ''}.`;
  }
  return verdict.message ?? `Decided by ${verdict.reason}: ${REASON_SPECS[verdict.reason]?.means ?? ''}.`;
}
