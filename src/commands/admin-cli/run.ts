import { parseArgs } from 'node:util';
import type { Action, Noun } from './action.js';
import { AUDIT } from './audit.js';
import { ApiError, createAdminClient } from './client.js';
import { CONNECTION_OPTIONS, connectionFrom, UsageError } from './connection.js';
import { GRANT_PATTERN_VERBS } from './grant-patterns.js';
import { GRANTS } from './grants.js';
import { GROUPS } from './groups.js';
import type { Io } from './output.js';
import { TOKENS } from './tokens.js';
import { USERS } from './users.js';

export const ADMIN_NOUNS: Readonly<Record<string, Noun>> = { users: USERS, groups: GROUPS, grants: { ...GRANTS, ...GRANT_PATTERN_VERBS }, tokens: TOKENS, audit: AUDIT };

export const CONNECTION_HELP =
  'Connection: MLFLOW_TRACKING_URI, MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_PASSWORD, or --url URL --username NAME --password-file PATH (- reads stdin).\n' +
  '  --password TOKEN works too, but every local user can read it in the process list (ps): prefer MLFLOW_TRACKING_PASSWORD or --password-file.\n' +
  '  Plain http:// is refused unless the host is loopback (localhost, 127.0.0.0/8, ::1) or --allow-plain-http is given: the password would cross the network readable.\n' +
  'Workspace (MLflow with workspaces): --workspace NAME, or MLFLOW_WORKSPACE: grants are read and made in it (default: `default`).\n' +
  'Output: a table, or the API\'s JSON with --json. Exit: 0 done, 1 the API refused (its message on stderr), 2 usage.\n';

function usageOf(noun: string, actions: Noun): string {
  return `usage:\n${Object.values(actions)
    .map((a) => `  ${a.usage}`)
    .join('\n')}\n${CONNECTION_HELP}`.replace(/^usage:/, `usage (flowgate ${noun}):`);
}

/**
 * Runs one action against a running flowgate's admin API. Exit 0 done, 1 the API (or the network)
 * refused, 2 the command line is wrong.
 */
export async function runAction(action: Action, argv: string[], io: Io): Promise<number> {
  let values: Record<string, string | boolean | string[] | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: argv,
      options: { ...CONNECTION_OPTIONS, ...action.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    }) as { values: Record<string, string | boolean | string[] | undefined>; positionals: string[] });
    if (values.help) {
      io.out(`usage: ${action.usage}\n${CONNECTION_HELP}`);
      return 0;
    }
    const wanted = action.args ?? [];
    if (positionals.length !== wanted.length)
      throw new UsageError(`expected ${wanted.length === 0 ? 'no arguments' : wanted.join(' ')}, got ${positionals.length === 0 ? 'none' : positionals.join(' ')}`);
    if (values['password-file'] === '-' && positionals.includes('-')) throw new UsageError('stdin cannot carry both the password (--password-file -) and FILE (-)');
    const client = createAdminClient(await connectionFrom(values, io.env, io.readFile));
    await action.run({ client, io, json: values.json === true, values, args: positionals });
    return 0;
  } catch (e) {
    if (e instanceof ApiError) {
      io.err(`flowgate: ${e.status ? `${e.status} ${e.errorCode}: ` : ''}${e.message}\n`);
      return 1;
    }
    if (e instanceof UsageError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      io.err(`flowgate: ${(e as Error).message}\nusage: ${action.usage}\n`);
      return 2;
    }
    throw e;
  }
}

/** `flowgate users|groups|grants|tokens|audit VERB …`. */
export async function runAdminCli(noun: string, argv: string[], io: Io): Promise<number> {
  const actions = ADMIN_NOUNS[noun]!;
  const verb = argv[0];
  const usage = usageOf(noun, actions);
  if (verb === undefined || verb === '--help' || verb === '-h' || verb === 'help') {
    (verb === undefined ? io.err : io.out)(usage);
    return verb === undefined ? 2 : 0;
  }
  const action = actions[verb];
  if (!action) {
    io.err(`flowgate: unknown ${noun} command '${verb}'\n${usage}`);
    return 2;
  }
  return runAction(action, argv.slice(1), io);
}
