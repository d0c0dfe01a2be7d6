import { seg } from './client.js';
import type { Noun } from './action.js';
import { printDone } from './output.js';

export const TOKENS: Noun = {
  create: {
    usage: 'flowgate tokens create USERNAME [--expires ISO-8601]   (prints the token once; the previous one stops working)',
    args: ['USERNAME'],
    options: { expires: { type: 'string' } },
    async run({ client, io, json, values, args }) {
      const raw = await client.call<{ token: string; expiration: string }>('PATCH', 'permissions/users/access-token', {
        username: args[0],
        ...(values.expires !== undefined ? { expiration: values.expires } : {}),
      });
      // The token alone on stdout, so `TOKEN=$(flowgate tokens create x)` works; the rest on stderr.
      if (json) printDone(io, true, raw, '');
      else {
        io.out(`${raw.token}\n`);
        io.err(`token for ${args[0]}, expires ${raw.expiration}; it is shown only once\n`);
      }
    },
  },
  revoke: {
    usage: 'flowgate tokens revoke USERNAME',
    args: ['USERNAME'],
    async run({ client, io, json, args }) {
      const raw = await client.call<{ revoked: unknown }>('DELETE', `permissions/users/${seg(args[0]!)}/access-token`);
      printDone(io, json, raw, `revoked ${args[0]}'s tokens (${String(raw.revoked)})`);
    },
  },
};
