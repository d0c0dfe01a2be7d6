import { seg } from './client.js';
import { UsageError } from './connection.js';
import type { Noun } from './action.js';
import { printDone, printRows } from './output.js';

const USER_COLUMNS = ['username', 'display_name', 'is_admin', 'is_service_account', 'sign_in', 'oidc_linked', 'created_at'] as const;
type Row = Record<string, unknown>;

function booleanFlag(value: unknown, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new UsageError(`--${name} takes true or false`);
}

/** `--sign-in oidc|local`, as the admin API spells it; absent leaves it to flowgate (create) or unchanged (update). */
function signInFlag(value: unknown): { sign_in?: 'oidc' | 'local' } {
  if (value === undefined) return {};
  if (value === 'oidc' || value === 'local') return { sign_in: value };
  throw new UsageError('--sign-in takes oidc (through the identity provider) or local (access tokens only)');
}

export const USERS: Noun = {
  list: {
    usage: 'flowgate users list [--service-accounts]',
    options: { 'service-accounts': { type: 'boolean' } },
    async run({ client, io, json, values }) {
      const sa = values['service-accounts'] === true;
      const raw = await client.call<{ users?: Row[]; service_accounts?: Row[] }>('GET', sa ? 'permissions/service-accounts' : 'permissions/users');
      printRows(io, json, raw, (sa ? raw.service_accounts : raw.users) ?? [], USER_COLUMNS);
    },
  },
  get: {
    usage: 'flowgate users get USERNAME',
    args: ['USERNAME'],
    async run({ client, io, json, args }) {
      const raw = await client.call<{ user: Row }>('GET', `permissions/users/${seg(args[0]!)}`);
      printRows(io, json, raw, [raw.user], [...USER_COLUMNS, 'groups']);
    },
  },
  create: {
    usage: 'flowgate users create USERNAME [--display-name NAME] [--admin | --service-account] [--sign-in oidc|local]',
    args: ['USERNAME'],
    options: { 'display-name': { type: 'string' }, admin: { type: 'boolean' }, 'service-account': { type: 'boolean' }, 'sign-in': { type: 'string' } },
    async run({ client, io, json, values, args }) {
      const raw = await client.call('POST', 'users/create', {
        username: args[0],
        ...(values['display-name'] !== undefined ? { display_name: values['display-name'] } : {}),
        is_admin: values.admin === true,
        is_service_account: values['service-account'] === true,
        ...signInFlag(values['sign-in']),
      });
      printDone(io, json, raw, `created ${values['service-account'] ? 'service account' : 'user'} ${args[0]}`);
    },
  },
  update: {
    usage: 'flowgate users update USERNAME [--display-name NAME] [--admin true|false] [--sign-in oidc|local]',
    args: ['USERNAME'],
    options: { 'display-name': { type: 'string' }, admin: { type: 'string' }, 'sign-in': { type: 'string' } },
    async run({ client, io, json, values, args }) {
      const isAdmin = booleanFlag(values.admin, 'admin');
      const body = {
        ...(values['display-name'] !== undefined ? { display_name: values['display-name'] } : {}),
        ...(isAdmin !== undefined ? { is_admin: isAdmin } : {}),
        ...signInFlag(values['sign-in']),
      };
      if (Object.keys(body).length === 0) throw new UsageError('nothing to update: pass --display-name, --admin or --sign-in');
      const raw = await client.call('PATCH', `permissions/users/${seg(args[0]!)}`, body);
      printDone(io, json, raw, `updated ${args[0]}`);
    },
  },
  delete: {
    usage: 'flowgate users delete USERNAME',
    args: ['USERNAME'],
    async run({ client, io, json, args }) {
      const raw = await client.call('DELETE', `permissions/users/${seg(args[0]!)}`);
      printDone(io, json, raw, `deleted ${args[0]}`);
    },
  },
};
