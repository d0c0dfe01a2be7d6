import { spellings } from '../../authz/resolve.js';
import { rewriteJsonAnswer } from '../after/rewrite-json.js';
import { hookFailed, obj, REWRITTEN_ANSWER_MAX_BYTES, type Hook } from './types.js';
import { jsonCopy } from '../json-copy.js';

/** MLflow's rule: EDIT on the experiment lists every queue; READ only the queues one is assigned to. */
export const filterReviewQueues: Hook = async ({ principal, refs, req, hook }, ctx) => {
  if ((await ctx.evaluator.decideNamed(principal, 'edit', refs)).allow) return {};
  const me = principal.username.trim().toLowerCase();
  delete req.headers['accept-encoding'];
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        const page = obj(json);
        if (!Array.isArray(page.review_queues)) return;
        const kept = page.review_queues.filter((q) => {
          const users = obj(q).users;
          return Array.isArray(users) && users.includes(me);
        });
        // MLflow's protobuf JSON leaves an empty list out: `[]` would say queues were withheld.
        if (kept.length > 0) page.review_queues = kept;
        else delete page.review_queues;
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};

/**
 * MLflow binds `completed_by` to the caller only when its own auth plugin runs; behind flowgate it
 * would take the client's value, so one reviewer could sign as another. MLflow reads protobuf JSON,
 * so `completedBy` is the same field: every spelling goes.
 */
export const stampReviewCompletedBy: Hook = ({ principal, request }) => {
  const body = jsonCopy(obj(request.body));
  for (const name of spellings('completed_by')) delete body[name];
  if (body.status !== 'PENDING' && body.status !== 1) body.completed_by = principal.username;
  return { body: Buffer.from(JSON.stringify(body)) };
};
