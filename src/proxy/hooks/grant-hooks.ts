import { readField } from '../../authz/resolve.js';
import { relayAfter } from '../after/relay.js';
import { hookFailed, obj, type Hook } from './types.js';

/** The creator of an experiment gets MANAGE on the id MLflow answers with. */
export const grantCreatorOfExperiment: Hook = ({ principal, hook }, ctx) => ({
  onResponse: relayAfter(async (json) => {
    const id = obj(json).experiment_id;
    if (typeof id === 'string' && id) await ctx.grantWriter.creator({ grantee: { type: 'user', id: principal.userId }, name: principal.username }, { kind: 'experiment', id });
  }, hookFailed(ctx, hook)),
});

/** The creator of a registered model or prompt gets MANAGE on the name MLflow answers with. */
export const grantCreatorOfModel: Hook = ({ principal, refs, hook }, ctx) => {
  const kind = refs.some((ref) => ref.kind === 'prompt') ? 'prompt' : 'registered_model';
  return {
    onResponse: relayAfter(async (json) => {
      const name = obj(obj(json).registered_model).name;
      if (typeof name !== 'string' || !name) return;
      await ctx.grantWriter.creator({ grantee: { type: 'user', id: principal.userId }, name: principal.username }, { kind, id: name }, ['registered_model', 'prompt']);
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
