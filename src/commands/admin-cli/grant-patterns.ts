import { seg } from './client.js';
import type { Noun } from './action.js';
import { GRANTEE_OPTIONS, granteeOf, granteeWords, type Grantee } from './grantee.js';
import { printDone, printRows } from './output.js';
import { KIND_WORDS, kindNamed, permissionNamed, USE_KIND_WORDS } from './resources.js';

interface PatternRow {
  resource_type: string;
  pattern: string;
  username?: string;
  group_name?: string;
  permission: string;
}

const patternsPath = (g: Grantee) => `permissions/${g.segment}/${seg(g.name)}/patterns`;

/** `flowgate grants patterns|set-pattern|delete-pattern`: grants on every resource whose name matches a glob. */
export const GRANT_PATTERN_VERBS: Noun = {
  patterns: {
    usage: `flowgate grants patterns [--user USERNAME | --group GROUP] [--kind ${KIND_WORDS}]   (everyone's without --user/--group)`,
    options: { ...GRANTEE_OPTIONS, kind: { type: 'string' } },
    async run({ client, io, json, values }) {
      const g = granteeOf(values, false);
      const q = new URLSearchParams();
      if (values.kind !== undefined) q.set('resource_type', kindNamed(values.kind as string).kind);
      const raw = await client.call<{ patterns: PatternRow[] }>('GET', `${g ? patternsPath(g) : 'permissions/patterns'}${q.size ? `?${q}` : ''}`);
      const rows = raw.patterns.map((p) => ({
        grantee: p.username !== undefined ? 'user' : 'group',
        name: p.username ?? p.group_name,
        kind: p.resource_type,
        pattern: p.pattern,
        permission: p.permission,
      }));
      printRows(io, json, raw, rows, ['grantee', 'name', 'kind', 'pattern', 'permission']);
    },
  },
  'set-pattern': {
    usage: `flowgate grants set-pattern (--user USERNAME | --group GROUP) KIND PATTERN PERMISSION   (KIND: ${KIND_WORDS}; USE only on ${USE_KIND_WORDS}) e.g. --group team-a experiment 'team-a/*' EDIT`,
    options: GRANTEE_OPTIONS,
    args: ['KIND', 'PATTERN', 'PERMISSION'],
    async run({ client, io, json, values, args }) {
      const g = granteeOf(values);
      const kind = kindNamed(args[0]!);
      const [pattern, permission] = [args[1]!, permissionNamed(args[2]!, kind)];
      const raw = await client.call('POST', patternsPath(g), { resource_type: kind.kind, pattern, permission });
      printDone(io, json, raw, `${granteeWords(g)}: ${permission} on every ${args[0]} matching ${pattern}`);
    },
  },
  'delete-pattern': {
    usage: 'flowgate grants delete-pattern (--user USERNAME | --group GROUP) KIND PATTERN',
    options: GRANTEE_OPTIONS,
    args: ['KIND', 'PATTERN'],
    async run({ client, io, json, values, args }) {
      const g = granteeOf(values);
      const q = new URLSearchParams({ resource_type: kindNamed(args[0]!).kind, pattern: args[1]! });
      const raw = await client.call('DELETE', `${patternsPath(g)}?${q}`);
      printDone(io, json, raw, `removed ${g.name}'s pattern grant on ${args[0]} ${args[1]}`);
    },
  },
};
