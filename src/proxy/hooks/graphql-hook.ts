import { modelKind } from '../../resources/kinds.js';
import { rewriteJsonAnswer } from '../after/rewrite-json.js';
import { canRead, hookFailed, REWRITTEN_ANSWER_MAX_BYTES, type Hook } from './types.js';

/** The document's fields were decided by the evaluation; what is left is removing unreadable model versions from the answer. */
export const filterGraphqlAnswer: Hook = async ({ principal, verdict, req, hook }, ctx) => {
  const plan = verdict.graphql;
  if (!plan || plan.modelVersionLists.length === 0) return {};
  const { filterModelVersions } = await import('../../authz/graphql-policy.js');
  const canReadModel = async (name: string) =>
    canRead(ctx, principal, [{ kind: modelKind(await ctx.lookups.isPrompt(name)), id: name }]);
  // The answer is rewritten, so it must come back as plain JSON.
  delete req.headers['accept-encoding'];
  return {
    onResponse: rewriteJsonAnswer((json) => filterModelVersions(json, plan.modelVersionLists, canReadModel), REWRITTEN_ANSWER_MAX_BYTES, hookFailed(ctx, hook)),
  };
};
