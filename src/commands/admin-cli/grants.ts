import { ApiError, seg, type AdminClient } from './client.js';
import { GRANTEE_OPTIONS, granteeOf, granteeWords, type Grantee } from './grantee.js';
import type { Noun } from './action.js';
import { printDone, printRows } from './output.js';
import { KIND_WORDS, KINDS, USE_KIND_WORDS, kindNamed, permissionNamed, type Kind, type Permission } from './resources.js';
import { adminIdSegments, idOfGrantJson } from '../../resources/kinds.js';
import { experimentNamed, isDigits } from './mlflow-lookups.js';

type Row = Record<string, unknown>;

export const grantPath = (g: Grantee, k: Kind, resource: string) => `permissions/${g.segment}/${seg(g.name)}/${k.segment}/${adminIdSegments(k.kind, resource)}`;

/** Creates the grant, or changes it when one exists: the end state is what was asked. */
export async function setGrant(client: AdminClient, g: Grantee, k: Kind, resource: string, permission: Permission): Promise<Row> {
  try {
    return await client.call('POST', grantPath(g, k, resource), { permission });
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) return client.call('PATCH', grantPath(g, k, resource), { permission });
    throw e;
  }
}

/**
 * The resource as the admin API names it: an experiment by its id, found by its name when a name was
 * given (docs: ID-OR-NAME); other kinds by their name as given. Digits are looked up both as an id and
 * as a name (an experiment may be named `2024`): the one MLflow has is used, two different ones are a
 * usage error, and digits MLflow knows as neither stay an id (a grant on an experiment MLflow no longer
 * has can still be removed).
 */
export async function resourceOf(client: AdminClient, k: Kind, idOrName: string): Promise<string> {
  if (k.kind !== 'experiment') return idOrName;
  const found = await experimentNamed(client, idOrName);
  if (found) return found.id;
  if (isDigits(idOrName)) return idOrName;
  throw new ApiError(404, 'RESOURCE_DOES_NOT_EXIST', `MLflow has no experiment named '${idOrName}' (give its name exactly, or its numeric id)`);
}

/** What a grant's words add when the API made its group for it: a misspelt group name is otherwise silent. */
export const newGroupNote = (g: Grantee, raw: Row) =>
  g.segment === 'groups' && raw.new_group === true ? ` (new group '${g.name}': no group had this name, so it was created; check the spelling)` : '';

export async function deleteGrant(client: AdminClient, g: Grantee, k: Kind, resource: string): Promise<Row> {
  return client.call('DELETE', grantPath(g, k, resource));
}

export const GRANTS: Noun = {
  list: {
    usage: `flowgate grants list (--user USERNAME | --group GROUP) [--kind ${KIND_WORDS}]`,
    options: { ...GRANTEE_OPTIONS, kind: { type: 'string' } },
    async run({ client, io, json, values }) {
      const g = granteeOf(values);
      const kinds = values.kind !== undefined ? [kindNamed(values.kind as string)] : KINDS;
      const rows: Row[] = [];
      for (const k of kinds) {
        const raw = await client.call<{ permissions: Row[] }>('GET', `permissions/${g.segment}/${seg(g.name)}/${k.segment}`);
        for (const p of raw.permissions) rows.push({ kind: k.kind, resource: idOfGrantJson(k.kind, p), permission: p.permission });
      }
      printRows(io, json, { permissions: rows }, rows, ['kind', 'resource', 'permission']);
    },
  },
  on: {
    usage: `flowgate grants on KIND RESOURCE   (who holds a grant on it; KIND: ${KIND_WORDS}; RESOURCE: an experiment's id or name, else a name)`,
    args: ['KIND', 'RESOURCE'],
    async run({ client, io, json, args }) {
      const k = kindNamed(args[0]!);
      const base = `permissions/${k.segment}/${adminIdSegments(k.kind, await resourceOf(client, k, args[1]!))}`;
      const users = await client.call<{ users: Row[] }>('GET', `${base}/users`);
      const groups = await client.call<{ groups: Row[] }>('GET', `${base}/groups`);
      const rows = [
        ...users.users.map((r) => ({ grantee: 'user', name: r.username, permission: r.permission })),
        ...groups.groups.map((r) => ({ grantee: 'group', name: r.group_name, permission: r.permission })),
      ];
      printRows(io, json, { users: users.users, groups: groups.groups }, rows, ['grantee', 'name', 'permission']);
    },
  },
  set: {
    usage: `flowgate grants set (--user USERNAME | --group GROUP) KIND ID-OR-NAME PERMISSION   (KIND: ${KIND_WORDS}; USE only on ${USE_KIND_WORDS})`,
    options: GRANTEE_OPTIONS,
    args: ['KIND', 'RESOURCE', 'PERMISSION'],
    async run({ client, io, json, values, args }) {
      const g = granteeOf(values);
      const kind = kindNamed(args[0]!);
      const permission = permissionNamed(args[2]!, kind);
      const id = await resourceOf(client, kind, args[1]!);
      const raw = await setGrant(client, g, kind, id, permission);
      const named = id === args[1] ? args[1] : `${args[1]} (id ${id})`;
      printDone(io, json, raw, `${granteeWords(g)}: ${permission} on ${args[0]} ${named}${newGroupNote(g, raw)}`);
    },
  },
  delete: {
    usage: 'flowgate grants delete (--user USERNAME | --group GROUP) KIND ID-OR-NAME',
    options: GRANTEE_OPTIONS,
    args: ['KIND', 'RESOURCE'],
    async run({ client, io, json, values, args }) {
      const g = granteeOf(values);
      const kind = kindNamed(args[0]!);
      const id = await resourceOf(client, kind, args[1]!);
      const raw = await deleteGrant(client, g, kind, id);
      printDone(io, json, raw, `removed ${g.name}'s grant on ${args[0]} ${id === args[1] ? args[1] : `${args[1]} (id ${id})`}`);
    },
  },
  prune: {
    usage: 'flowgate grants prune [--dry-run]   (remove the grants of resources MLflow no longer has, after mlflow gc; done by the running flowgate)',
    options: { 'dry-run': { type: 'boolean' } },
    async run({ client, io, json, values }) {
      const dryRun = values['dry-run'] === true;
      const raw = await client.call<{ checked: number; orphans: string[]; unknown: string[] }>('POST', 'permissions/grants/prune', { dry_run: dryRun });
      if (json) io.out(`${JSON.stringify(raw)}\n`);
      else {
        const verb = dryRun ? 'would prune' : 'pruned';
        for (const ref of raw.orphans) io.out(`${verb}\t${ref}\n`);
        for (const ref of raw.unknown) io.out(`kept (MLflow did not answer)\t${ref}\n`);
        io.out(`${raw.checked} resources checked, ${raw.orphans.length} ${verb}, ${raw.unknown.length} unknown\n`);
      }
      if (raw.unknown.length > 0) throw new ApiError(0, 'UNKNOWN', `MLflow did not answer for ${raw.unknown.length} resource(s); their grants were kept`);
    },
  },
};
