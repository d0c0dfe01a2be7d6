import { isMissingRef, readField } from '../../authz/resolve.js';
import { forbidden, sendJson } from '../../errors.js';
import type { Principal } from '../../principals/types.js';
import { KINDS, MCP_SERVER } from '../../resources/kinds.js';
import { relayAfter } from '../after/relay.js';
import { hookFailed, obj, type Hook, type HookContext } from './types.js';

/** MLflow's create of an MCP server, asked at its `/api/` path (the registry exists only in releases serving it under any static prefix). */
const CREATE_PATH = KINDS[MCP_SERVER].lookup.path;

const creatorOf = (principal: Principal) => ({ grantee: { type: 'user' as const, id: principal.userId }, name: principal.username });

const serverRef = (name: string) => ({ kind: MCP_SERVER, id: name });

/** The creator of an MCP server gets MANAGE on the name MLflow answers with (stale grants on it pruned). */
export const grantCreatorOfMcpServer: Hook = ({ principal, hook }, ctx) => ({
  onResponse: relayAfter(async (json) => {
    const name = obj(json).name;
    if (typeof name === 'string' && name !== '') await ctx.grantWriter.creator(creatorOf(principal), serverRef(name));
  }, hookFailed(ctx, hook)),
});

/**
 * MLflow makes the server of a first version with the version, with its own authority. Whoever may
 * create was let through for a server MLflow did not have (`createsMissing`); before the version is
 * forwarded, flowgate makes the server itself, so the creator's MANAGE is on a server they made: one
 * made by someone else in the meantime answers RESOURCE_ALREADY_EXISTS, and the version then needs
 * EDIT on it, as on any existing server (MLflow's own recheck, `_ensure_version_create_parent_access`).
 */
export const makeMcpServerParent: Hook = async ({ refs, principal }, ctx) => {
  const ref = refs[0];
  if (ref === undefined || !isMissingRef(ref)) return {};
  const made = await ctx.upstream.call('POST', CREATE_PATH, { name: ref.id });
  if (made.status === 200) {
    await ctx.grantWriter.creator(creatorOf(principal), serverRef(ref.id));
    return {};
  }
  if (obj(made.json).error_code === 'RESOURCE_ALREADY_EXISTS') {
    await mayEdit(ctx, principal, ref.id);
    return {};
  }
  // MLflow refused to make it (the same refusal the version's create would meet): its answer, as it gave it.
  return { respond: async (res) => sendJson(res, made.status, made.json) };
};

async function mayEdit(ctx: HookContext, principal: Principal, name: string): Promise<void> {
  const decision = await ctx.evaluator.decideNamed(principal, 'edit', [serverRef(name)]);
  if (!decision.allow) throw forbidden(`Permission denied: ${principal.username} may not edit the MCP server it names`, decision.reason);
}

/** A deleted server's grants go with it (MLflow's basic-auth drops them too), so a later server of that name starts with none. */
export const dropMcpServerGrants: Hook = ({ entry, request, principal, hook }, ctx) => {
  const [name] = readField(entry.id, request);
  if (name === undefined) return {};
  return {
    onResponse: relayAfter(async () => {
      await ctx.grantWriter.dropWithResource(principal.username, serverRef(name));
    }, hookFailed(ctx, hook)),
  };
};
