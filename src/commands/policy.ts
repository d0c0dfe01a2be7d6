import { parseArgs } from 'node:util';
import { parse, stringify } from 'yaml';
import type { Action } from './admin-cli/action.js';
import { MAX_BATCH_CALLS } from '../admin/batch.js';
import { ApiError, type AdminClient } from './admin-cli/client.js';
import { UsageError } from './admin-cli/connection.js';
import type { Io } from './admin-cli/output.js';
import { runAction } from './admin-cli/run.js';
import { policyDiff } from './policy-diff.js';
import { keyedInWorkspace } from '../resources/kinds.js';
import { grantResource, policyDocument, withFileWorkspaces, type PolicyDocument } from './policy-document.js';
import { experimentsPerWorkspace, readPolicyState } from './policy-state.js';

const EXPORT: Action = {
  usage: 'flowgate policy export [--output FILE]',
  options: { output: { type: 'string', short: 'o' } },
  async run({ client, io, values }) {
    const { document, skipped, tokenUsers, tokenGrants } = await readPolicyState(client, experimentsPerWorkspace(client));
    for (const s of skipped) io.err(`flowgate: left out a grant on ${s}: MLflow no longer has it (flowgate grants prune removes such grants)\n`);
    for (const name of [...tokenUsers].sort()) {
      const held = [...tokenGrants.grants, ...tokenGrants.patterns].filter((g) => g.user === name).length;
      io.err(
        `flowgate: left out user ${name}: its issuer's token made it (and puts it in its groups) at its first call, on each flowgate` +
          `${held > 0 ? `; with its ${held} grants and pattern grants: grant its group, or grant it on another flowgate once it has called` : ''}\n`,
      );
    }
    const yaml = `# flowgate policy: apply with \`flowgate policy apply FILE\`. Holds no tokens.\n${stringify(document)}`;
    if (typeof values.output === 'string') {
      const { writeFile } = await import('node:fs/promises');
      await writeFile(values.output, yaml, { mode: 0o600 });
    } else io.out(yaml);
  },
};

function parseDocument(text: string, file: string): PolicyDocument {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (e) {
    throw new UsageError(`${file} is not YAML: ${(e as Error).message}`);
  }
  const parsed = policyDocument.safeParse(raw);
  if (!parsed.success)
    throw new UsageError(`${file} is not a flowgate policy:\n${parsed.error.issues.map((i) => `  ${i.path.join('.') || '(top)'}: ${i.message}`).join('\n')}`);
  return withFileWorkspaces(parsed.data);
}

type BatchedCall = { method: string; path: string; body?: unknown; workspace?: string };

/** A client that passes reads through and collects the admin changes (each with its workspace), for one batch call. */
function batchingClient(client: AdminClient, calls: BatchedCall[] = []): AdminClient & { calls: BatchedCall[] } {
  return {
    url: client.url,
    ...(client.workspace !== undefined ? { workspace: client.workspace } : {}),
    calls,
    call<T>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T> {
      if (method === 'GET') return client.call<T>(method, path, body);
      calls.push({ method, path, ...(body === undefined ? {} : { body }), ...(client.workspace !== undefined ? { workspace: client.workspace } : {}) });
      return Promise.resolve({} as T);
    },
    inWorkspace: (workspace) => batchingClient(client.inWorkspace(workspace), calls),
    workspaces: () => client.workspaces(),
  };
}

const APPLY: Action = {
  usage: 'flowgate policy apply FILE [--dry-run] [--prune]   (FILE - reads stdin)',
  args: ['FILE'],
  options: { 'dry-run': { type: 'boolean' }, prune: { type: 'boolean' } },
  async run({ client, io, json, values, args }) {
    const wanted = parseDocument(await io.readFile(args[0]!), args[0]!);
    const experiments = experimentsPerWorkspace(client);
    for (const g of wanted.grants)
      if (g.experiment !== undefined && (await experiments(g.in_workspace).idOf(g.experiment)) === undefined)
        throw new UsageError(`MLflow has no experiment named '${g.experiment}'${g.in_workspace === undefined ? '' : ` in workspace ${g.in_workspace}`} (named by a grant in ${args[0]})`);
    // Each grant is compared with what its own workspace holds (the default one's, untagged), whichever the
    // connection names: the workspaces of the file's grants kept in one (not membership, kept in none) are read too.
    const named = [
      ...wanted.grants.filter((g) => keyedInWorkspace(grantResource(g).kind)).map((g) => g.in_workspace),
      ...wanted.patterns.filter((p) => keyedInWorkspace(p.resource_type)).map((p) => p.in_workspace),
    ];
    const { document: current, bootstrapAdmin, tokenUsers, tokenGrants } = await readPolicyState(client, experiments, named);
    const username = io.env.MLFLOW_TRACKING_USERNAME;
    const kept: string[] = [];
    const changes = policyDiff(
      current,
      wanted,
      experiments,
      values.prune === true,
      (values.username as string | undefined) ?? username ?? '',
      { name: bootstrapAdmin, kept: (note) => kept.push(note) },
      { users: tokenUsers, ...tokenGrants },
    );
    const dryRun = values['dry-run'] === true;
    for (const k of kept) io.err(`flowgate: kept ${k}\n`);
    if (json) io.out(`${JSON.stringify({ dry_run: dryRun, changes: changes.map((c) => c.line), kept })}\n`);
    else for (const c of changes) io.out(`${c.line}\n`);
    if (!dryRun && changes.length > 0) {
      // The diff's changes go to flowgate as one batch: applied in one transaction, all or none.
      const batch = batchingClient(client);
      for (const c of changes) await c.apply(batch);
      const parts = `nothing was applied: apply ${args[0]} in parts (some of its users, groups or grants at a time)`;
      if (batch.calls.length > MAX_BATCH_CALLS)
        throw new UsageError(`the diff takes ${batch.calls.length} calls, more than the ${MAX_BATCH_CALLS} flowgate applies in one batch (all or none); ${parts}`);
      try {
        await client.call('POST', 'permissions/batch', { calls: batch.calls });
      } catch (e) {
        if (e instanceof ApiError && e.status === 413)
          throw new ApiError(e.status, e.errorCode, `the diff's ${batch.calls.length} calls make a batch larger than flowgate reads (${e.message}); ${parts}`);
        throw e;
      }
    }
    if (!json) io.err(`${changes.length === 0 ? 'no changes' : `${changes.length} ${dryRun ? 'changes (dry run: none applied)' : 'changes applied'}`}\n`);
  },
};

const ACTIONS: Record<string, Action> = { export: EXPORT, apply: APPLY };

/** `flowgate policy export|apply`. */
export async function runPolicy(argv: string[], io: Io): Promise<number> {
  const { positionals } = parseArgs({ args: argv, strict: false, allowPositionals: true });
  const verb = positionals[0];
  const action = verb === undefined ? undefined : ACTIONS[verb];
  if (!action) {
    io.err(`usage:\n  ${EXPORT.usage}\n  ${APPLY.usage}\n`);
    return argv.includes('--help') || argv.includes('-h') ? 0 : 2;
  }
  return runAction(action, argv.filter((a, i) => i !== argv.indexOf(verb!)), io);
}
