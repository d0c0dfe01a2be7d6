import { isMissingRef, readField } from '../../authz/resolve.js';
import type { Need, ResourceRef } from '../../authz/types.js';
import { ERROR_STATUS, FlowgateError, forbidden, type ErrorCode } from '../../errors.js';
import type { Principal } from '../../principals/types.js';
import { SKILL } from '../../resources/kinds.js';
import { parseSkillId, skillId } from '../../resources/skill-identity.js';
import { relayAfter } from '../after/relay.js';
import { hookFailed, obj, type Hook, type HookContext } from './types.js';

/** MLflow's Skill collection at its `/ajax-api/` twin, which every release serves under a static prefix. */
const SKILLS = '/ajax-api/3.0/mlflow/skills';

/** The Skill MLflow's answer is (its organization and name), by flowgate's id for it. */
function answeredSkill(json: unknown): ResourceRef | undefined {
  const { name, organization = '' } = obj(json);
  if (typeof name !== 'string' || typeof organization !== 'string') return undefined;
  const id = skillId({ organization, name });
  return parseSkillId(id) === undefined ? undefined : { kind: SKILL, id };
}

/** The creator of a Skill gets MANAGE on the one MLflow answers with; grants already on that id (a Skill removed outside flowgate, or given before anyone made it) are pruned first. */
export const grantCreatorOfSkill: Hook = ({ principal, hook }, ctx) => ({
  onResponse: relayAfter(async (json) => {
    const ref = answeredSkill(json);
    if (ref !== undefined) await ctx.grantWriter.creator({ grantee: { type: 'user', id: principal.userId }, name: principal.username }, ref);
  }, hookFailed(ctx, hook)),
});

/** MLflow's error for a Skill flowgate tried to make, as flowgate's own (its code where MLflow gave a known one). */
function upstreamError(status: number, json: unknown, id: string): FlowgateError {
  const code = obj(json).error_code;
  const known = typeof code === 'string' && code in ERROR_STATUS ? (code as ErrorCode) : status >= 500 ? 'TEMPORARILY_UNAVAILABLE' : 'BAD_REQUEST';
  const message = obj(json).message;
  return new FlowgateError(known, typeof message === 'string' && message !== '' ? message : `Could not make skill '${id}' (the tracking server answered ${status})`);
}

/**
 * A registration that makes its Skill (decided as a create): flowgate makes the Skill first, before the
 * registration is forwarded. MLflow makes one Skill of a name once (a second maker is refused), so the
 * request whose make succeeds is the one that made it, and its caller gets MANAGE; MLflow stamps no
 * creator behind flowgate, and a registration that made its Skill itself could not be told from one
 * that landed in a Skill someone else made a moment before. When someone did (MLflow: already exists),
 * the Skill is decided as an existing one, by the row's need (EDIT). The registration then adds the
 * version to the Skill the caller now manages; one that fails afterwards leaves it empty, theirs to delete.
 */
export const registerSkill: Hook = async ({ entry, principal, refs, hook }, ctx) => {
  const creator = { grantee: { type: 'user' as const, id: principal.userId }, name: principal.username };
  for (const ref of refs) {
    if (!isMissingRef(ref)) continue;
    const identity = parseSkillId(ref.id);
    if (identity === undefined) throw new Error(`not a Skill id: ${ref.id}`);
    const made = await ctx.upstream.call('POST', SKILLS, { name: identity.name, organization: identity.organization });
    if (made.status === 200) {
      await ctx.grantWriter.creator(creator, { kind: SKILL, id: ref.id }).catch((e: unknown) => {
        hookFailed(ctx, hook)(e);
        throw new FlowgateError('TEMPORARILY_UNAVAILABLE', `Skill '${ref.id}' was made, but its creator's grant could not be written; ask an administrator`);
      });
      continue;
    }
    if (obj(made.json).error_code !== 'RESOURCE_ALREADY_EXISTS') throw upstreamError(made.status, made.json, ref.id);
    await mayStill(ctx, principal, entry.need, ref.id);
  }
  return {};
};

/** Someone else made the Skill while the request was decided: it needs what a registration into an existing Skill needs. */
async function mayStill(ctx: HookContext, principal: Principal, need: Need, id: string): Promise<void> {
  const decision = await ctx.evaluator.decideNamed(principal, need, [{ kind: SKILL, id }]);
  if (!decision.allow) throw forbidden(`Permission denied: ${principal.username} may not ${need} on skill '${id}'`, decision.reason);
}

/** A deleted Skill's grants go with it (once MLflow answered the delete with success). */
export const dropSkillGrants: Hook = ({ entry, request, principal, hook }, ctx) => {
  const [id] = readField(entry.id, request);
  if (id === undefined) return {};
  return {
    onResponse: relayAfter(async () => {
      await ctx.grantWriter.dropWithResource(principal.username, { kind: SKILL, id });
    }, hookFailed(ctx, hook)),
  };
};
