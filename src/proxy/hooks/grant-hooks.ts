import { PROMPT_TAG } from '../../authz/mlflow-lookups.js';
import { experimentRef, readField } from '../../authz/resolve.js';
import { MODEL_KINDS, modelKind } from '../../resources/kinds.js';
import { relayAfter } from '../after/relay.js';
import { hookFailed, obj, type Hook } from './types.js';

/**
 * The creator of an experiment gets MANAGE on the id MLflow answers with. The id may be one MLflow
 * handed out before (its SQLite store reuses the highest id `mlflow gc` freed): the name cached for
 * it goes too, or pattern grants would judge the new experiment by the old one's name.
 */
export const grantCreatorOfExperiment: Hook = ({ principal, hook }, ctx) => ({
  onResponse: relayAfter(async (json) => {
    const id = obj(json).experiment_id;
    if (typeof id !== 'string' || !id) return;
    ctx.mappings.forget({ cache: 'experiment_names', key: '' });
    await ctx.grantWriter.creator({ grantee: { type: 'user', id: principal.userId }, name: principal.username }, experimentRef(id));
  }, hookFailed(ctx, hook)),
});

/** MLflow's own rule (`RegisteredModel._is_prompt`): the flag's last value, `true` in any case. */
function storedAsPrompt(tags: unknown): boolean {
  let value: unknown;
  for (const tag of Array.isArray(tags) ? tags : []) if (obj(tag).key === PROMPT_TAG) value = obj(tag).value;
  return typeof value === 'string' && value.toLowerCase() === 'true';
}

/**
 * The creator of a registered model or prompt gets MANAGE on the name MLflow answers with, as the
 * kind MLflow stored (its answer's tags), not the kind the request looked like.
 */
export const grantCreatorOfModel: Hook = ({ principal, hook }, ctx) => {
  return {
    onResponse: relayAfter(async (json) => {
      const model = obj(obj(json).registered_model);
      const name = model.name;
      if (typeof name !== 'string' || !name) return;
      const kind = modelKind(storedAsPrompt(model.tags));
      await ctx.grantWriter.creator({ grantee: { type: 'user', id: principal.userId }, name: principal.username }, { kind, id: name }, MODEL_KINDS);
      ctx.mappings.forget({ cache: 'model', key: name });
    }, hookFailed(ctx, hook)),
  };
};

/** A model's grants follow it when MLflow renames (`new_name`) or deletes it. */
export const followModel: Hook = ({ entry, request, principal, hook }, ctx) => {
  const [name] = readField(entry.id, request);
  const renamed = hook === 'move_registered_model_grants';
  const [newName] = renamed ? readField({ kind: 'model_name', field: 'new_name', from: 'body' }, request) : [];
  if (name === undefined || (renamed && newName === undefined)) return {};
  return {
    onResponse: relayAfter(async () => {
      await ctx.grantWriter.followModel(principal.username, name, newName);
      ctx.mappings.forget({ cache: 'model', key: name });
      if (newName !== undefined) ctx.mappings.forget({ cache: 'model', key: newName });
    }, hookFailed(ctx, hook)),
  };
};
