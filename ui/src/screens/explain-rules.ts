import { qs, type ExplainedResource, type Explanation } from '../api';
import { lookupOf, numbered, type Kind } from '../kinds';

/**
 * What "read", "edit" and "manage" stand for on each kind: one real MLflow call of the route catalog
 * (src/authz/catalog.ts) that needs exactly that permission, so the explanation is of a request a
 * client could send. Prompts are registered models to MLflow; flowgate tells them apart by their tag.
 */
export const ACTIONS = ['read', 'edit', 'manage'] as const;
export type Action = (typeof ACTIONS)[number];

export interface Call {
  readonly method: string;
  /** From MLflow's root, with the query. */
  readonly target: string;
  readonly body?: Record<string, string>;
}

const V2 = '/api/2.0/mlflow';

export function callFor(kind: Kind, id: string, action: Action): Call {
  // Reading one is the registry's own look-up of it.
  const lookup = lookupOf(kind);
  if (action === 'read') return { method: 'GET', target: `${lookup.path}${qs({ [lookup.param]: id })}` };
  if (numbered(kind)) return { method: 'POST', target: `${V2}/experiments/${action === 'edit' ? 'update' : 'delete'}`, body: { experiment_id: id } };
  if (action === 'edit') return { method: 'PATCH', target: `${V2}/registered-models/update`, body: { name: id } };
  return { method: 'DELETE', target: `${V2}/registered-models/delete`, body: { name: id } };
}

export const ACTION_LABEL: Record<Action, string> = {
  read: 'Read (view it)',
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

/** The deciding rule in words, for the person reading the panel. */
export function ruleInWords(e: Explanation, kind: Kind): string {
  const { username, verdict, route } = e;
  const need = route?.need ?? '';
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
      return `Neither ${username} nor any of their groups holds a grant here: the default permission ${r?.effective ?? ''} ${verb} ${need}.`;
    case 'authenticated-route':
      return 'Anyone signed in may make this call (its answer is filtered to what they may read).';
    case 'public-route':
      return 'Anyone may make this call.';
    case 'admin-only-route':
      return 'Only administrators may make this call.';
    case 'route-not-found':
      return 'flowgate does not know this call and denies it.';
  }
  return verdict.message ?? `Decided by ${verdict.reason}.`;
}
