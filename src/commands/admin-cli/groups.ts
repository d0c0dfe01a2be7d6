import { seg } from './client.js';
import type { Noun } from './action.js';
import { printDone, printRows } from './output.js';

type Row = Record<string, unknown>;

export const GROUPS: Noun = {
  list: {
    usage: 'flowgate groups list',
    async run({ client, io, json }) {
      const raw = await client.call<{ groups: unknown[] }>('GET', 'permissions/groups');
      const rows = raw.groups.map((g) => (typeof g === 'string' ? { name: g } : (g as Row)));
      printRows(io, json, raw, rows, ['name', 'created_at']);
    },
  },
  create: {
    usage: 'flowgate groups create GROUP',
    args: ['GROUP'],
    async run({ client, io, json, args }) {
      const raw = await client.call('POST', 'permissions/groups', { group_name: args[0] });
      printDone(io, json, raw, `created group ${args[0]}`);
    },
  },
  delete: {
    usage: 'flowgate groups delete GROUP',
    args: ['GROUP'],
    async run({ client, io, json, args }) {
      const raw = await client.call('DELETE', `permissions/groups/${seg(args[0]!)}`);
      printDone(io, json, raw, `deleted group ${args[0]}`);
    },
  },
  members: {
    usage: 'flowgate groups members GROUP',
    args: ['GROUP'],
    async run({ client, io, json, args }) {
      const raw = await client.call<{ users: Row[] }>('GET', `permissions/groups/${seg(args[0]!)}/users`);
      printRows(io, json, raw, raw.users, ['username', 'display_name']);
    },
  },
  'add-member': {
    usage: 'flowgate groups add-member GROUP USERNAME',
    args: ['GROUP', 'USERNAME'],
    async run({ client, io, json, args }) {
      const raw = await client.call('POST', `permissions/groups/${seg(args[0]!)}/users`, { username: args[1] });
      printDone(io, json, raw, `added ${args[1]} to ${args[0]}`);
    },
  },
  'remove-member': {
    usage: 'flowgate groups remove-member GROUP USERNAME',
    args: ['GROUP', 'USERNAME'],
    async run({ client, io, json, args }) {
      const raw = await client.call('DELETE', `permissions/groups/${seg(args[0]!)}/users/${seg(args[1]!)}`);
      printDone(io, json, raw, `removed ${args[1]} from ${args[0]}`);
    },
  },
};
