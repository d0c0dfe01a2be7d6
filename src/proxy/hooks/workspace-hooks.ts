import { rewriteJsonAnswer } from '../after/rewrite-json.js';
import { hookFailed, obj, REWRITTEN_ANSWER_MAX_BYTES, type Hook } from './types.js';

/**
 * MLflow's workspace list, as its basic-auth lists it: the workspaces the caller holds a role in
 * (and the default one while it is open to everyone), so the UI's workspace picker offers only those.
 */
export const filterWorkspaces: Hook = ({ principal, req, hook }, ctx) => {
  delete req.headers['accept-encoding'];
  return {
    onResponse: rewriteJsonAnswer(
      async (json) => {
        const answer = obj(json);
        const rows = Array.isArray(answer.workspaces) ? answer.workspaces : [];
        answer.workspaces = rows.filter((row) => {
          const name = obj(row).name;
          return typeof name === 'string' && ctx.workspaces !== undefined && ctx.workspaces.in(principal, name).member;
        });
      },
      REWRITTEN_ANSWER_MAX_BYTES,
      hookFailed(ctx, hook),
    ),
  };
};
