import { ApiError, seg, type AdminClient } from './client.js';
import { GRANTEE_OPTIONS, granteeOf, granteeWords, type Grantee } from './grantee.js';
import type { Noun } from './action.js';
import { printDone, printRows } from './output.js';
import { KIND_WORDS, KINDS, USE_KIND_WORDS, kindNamed, permissionNamed, type Kind, type Permission } from './resources.js';
import { idOfGrantJson } from '../../resources/kinds.js';

type Row = Record<string, unknown>;

export const grantPath = (g: Grantee, k: Kind, resource: string) => `permissions/${g.segment}/${seg(g.name)}/${k.segment}/${seg(resource)}`;

/** Creates the grant, or changes it when one exists: the end state is what was asked. */
export async function setGrant(client: AdminClient, g: Grantee, k: Kind, resource: string, permission: Permission): Promise<Row> {
  try {
    return await client.call('POST', grantPath(g, k, resource), { permission });
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) return client.call('PATCH', grantPath(g, k, resource), { permission });
    throw e;
  }
}

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
    usage: `flowgate grants on KIND RESOURCE   (who holds a grant on it; KIND: ${KIND_WORDS}; RESOURCE is an experiment id, else a name)`,
    args: ['KIND', 'RESOURCE'],
    async run({ client, io, json, args }) {
      const k = kindNamed(args[0]!);
      const base = `permissions/${k.segment}/${seg(args[1]!)}`;
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
    usage: `flowgate grants set (--user USERNAME | --group GROUP) KIND RESOURCE PERMISSION   (KIND: ${KIND_WORDS}; USE only on ${USE_KIND_WORDS})`,
    options: GRANTEE_OPTIONS,
    args: ['KIND', 'RESOURCE', 'PERMISSION'],
    async run({ client, io, json, values, args }) {
      const g = granteeOf(values);
      const kind = kindNamed(args[0]!);
      const permission = permissionNamed(args[2]!, kind);
      const raw = await setGrant(client, g, kind, args[1]!, permission);
      printDone(io, json, raw, `${granteeWords(g)}: ${permission} on ${args[0]} ${args[1]}`);
    },
  },
  delete: {
    usage: 'flowgate grants delete (--user USERNAME | --group GROUP) KIND RESOURCE',
    options: GRANTEE_OPTIONS,
    args: ['KIND', 'RESOURCE'],
    async run({ client, io, json, values, args }) {
      const g = granteeOf(values);
      const raw = await deleteGrant(client, g, kindNamed(args[0]!), args[1]!);
      printDone(io, json, raw, `removed ${g.name}'s grant on ${args[0]} ${args[1]}`);
    },
  },
};
