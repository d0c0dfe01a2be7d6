import { afterSuccess } from '../after/relay.js';
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

/**
 * A deleted workspace's grants go with it, once MLflow answered the delete with success (in any mode:
 * RESTRICT on an empty workspace, CASCADE, SET_DEFAULT): its members and administrators, the grants on
 * what was in it and the pattern grants made in it (`GrantWriter.dropWorkspace`). A workspace made again
 * under the name gives nobody back a role. A refused delete (resources left under RESTRICT, a name
 * conflict under SET_DEFAULT, `default`) changes nothing. Cached experiment and gateway names go too,
 * here and in every flowgate on the store: a workspace made again holds other resources under them.
 */
export const dropWorkspaceGrants: Hook = ({ request, principal, hook }, ctx) => {
  const name = request.params.workspace_name;
  if (name === undefined) return {};
  return {
    onResponse: afterSuccess(async () => {
      await ctx.grantWriter.dropWorkspace(principal.username, name);
      ctx.mappings.forget({ cache: 'experiment_names', key: '' });
      ctx.mappings.forget({ cache: 'gateway', key: '' });
    }, hookFailed(ctx, hook)),
  };
};
