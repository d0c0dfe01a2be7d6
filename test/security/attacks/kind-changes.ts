import type { Attack, AttackContext } from '../harness/attack.js';
import { ok } from '../harness/http.js';
import { randomHex, V2 } from '../harness/world.js';

/*
 * Class 3: the prompt flag (`mlflow.prompt.is_prompt`) decides whether a registered model is governed
 * by model grants or by prompt grants. mallory may EDIT someone else's model (directly, through a
 * group or through a pattern) and MANAGE prompts by a pattern that matches its name (or the
 * reverse): flipping the flag would turn her EDIT into delete rights. Changing the flag needs MANAGE
 * on the resource as it is and as it will be.
 */
const FLAG = 'mlflow.prompt.is_prompt';
const AJAX_V2 = '/ajax-api/2.0/mlflow';

type Side = 'registered_model' | 'prompt';
type Holding = 'direct' | 'group' | 'pattern';
const SEGMENT: Record<Side, string> = { registered_model: 'registered-models', prompt: 'prompts' };

/** mallory's EDIT on `name` as `side`, held as `how`. */
async function grantEdit(ctx: AttackContext, side: Side, name: string, family: string, how: Holding): Promise<void> {
  if (how === 'direct') {
    ok(await ctx.admin('POST', `${V2}/permissions/users/mallory/${SEGMENT[side]}/${name}`, { body: { permission: 'EDIT' } }), 'grant mallory EDIT');
  } else if (how === 'group') {
    const group = `editors-${randomHex(4)}`;
    ok(await ctx.admin('POST', `${V2}/permissions/groups/${group}/${SEGMENT[side]}/${name}`, { body: { permission: 'EDIT' } }), 'grant the group EDIT');
    ok(await ctx.admin('POST', `${V2}/permissions/groups/${group}/users`, { body: { username: 'mallory' } }), 'mallory joins the group');
  } else {
    ok(
      await ctx.admin('POST', `${V2}/permissions/users/mallory/patterns`, { body: { resource_type: side, pattern: `${family}-*`, permission: 'EDIT' } }),
      'grant mallory an EDIT pattern',
    );
  }
}

const isPromptNow = async (ctx: AttackContext, name: string): Promise<boolean | undefined> => {
  const got = await ctx.mlflow('GET', `${V2}/registered-models/get`, { query: { name } });
  if (got.status !== 200) return undefined;
  const tags = (got.json?.registered_model?.tags ?? []) as Array<{ key: string; value: string }>;
  return tags.some((t) => t.key === FLAG && t.value.toLowerCase() === 'true');
};

interface Flip {
  readonly from: Side;
  readonly how: Holding;
  readonly label: string;
  /** mallory's request that changes the flag. */
  send(ctx: AttackContext, name: string): Promise<{ status: number }>;
}

const flipAttack = ({ from, how, label, send }: Flip): Attack => ({
  name: `${from === 'registered_model' ? 'model turned into a prompt' : 'prompt turned into a model'} (${label}) with EDIT held ${how === 'direct' ? 'directly' : `through a ${how}`} and a MANAGE pattern on the other side: refused, and no delete follows`,
  class: '3 kind changes',
  control: 'direct',
  async run(ctx) {
    const family = `kc-${randomHex(4)}`;
    const name = `${family}-x`;
    const other: Side = from === 'registered_model' ? 'prompt' : 'registered_model';
    const tags = from === 'prompt' ? [{ key: FLAG, value: 'true' }] : [];
    ok(await ctx.admin('POST', `${V2}/registered-models/create`, { body: { name, tags } }), 'admin creates it');
    await grantEdit(ctx, from, name, family, how);
    ok(
      await ctx.admin('POST', `${V2}/permissions/users/mallory/patterns`, { body: { resource_type: other, pattern: `${family}-*`, permission: 'MANAGE' } }),
      'grant mallory MANAGE by a pattern on the other side',
    );
    const wasPrompt = from === 'prompt';
    await send(ctx, name);
    if ((await isPromptNow(ctx, name)) !== wasPrompt) ctx.flag(`mallory flipped '${name}' from ${from} to ${other}`);
    // MLflow reads a DELETE's JSON body (a query-only name is a 400 before MLflow).
    const deleted = await ctx.attack('DELETE', `${V2}/registered-models/delete`, { body: { name } });
    if (deleted.status === 200 || (await isPromptNow(ctx, name)) === undefined) ctx.flag(`mallory deleted '${name}', on which she held EDIT`);
  },
});

const setFlag = (base: string, value: string, encode = false) => (ctx: AttackContext, name: string) => {
  const body = { name, key: FLAG, value };
  return ctx.attack('POST', `${base}/registered-models/set-tag`, { body: encode ? JSON.stringify(body) : body });
};

const HOLDINGS: readonly Holding[] = ['direct', 'group', 'pattern'];

export const kindChangeAttacks: readonly Attack[] = [
  ...HOLDINGS.flatMap((how) => [
    flipAttack({ from: 'registered_model', how, label: 'set-tag', send: setFlag(V2, 'true') }),
    flipAttack({ from: 'prompt', how, label: 'set-tag to false', send: setFlag(V2, 'false') }),
  ]),
  flipAttack({ from: 'registered_model', how: 'direct', label: 'set-tag on the ajax-api twin', send: setFlag(AJAX_V2, 'true') }),
  flipAttack({ from: 'registered_model', how: 'group', label: 'set-tag, double-encoded body', send: setFlag(V2, 'TRUE', true) }),
  flipAttack({ from: 'prompt', how: 'pattern', label: 'set-tag to false on the ajax-api twin', send: setFlag(AJAX_V2, 'false') }),
  flipAttack({
    from: 'prompt',
    how: 'direct',
    label: 'delete-tag, double-encoded body',
    send: (ctx, name) => ctx.attack('DELETE', `${V2}/registered-models/delete-tag`, { body: JSON.stringify({ name, key: FLAG }) }),
  }),
  flipAttack({
    from: 'prompt',
    how: 'group',
    label: 'delete-tag on the ajax-api twin, key in the body',
    send: (ctx, name) => ctx.attack('DELETE', `${AJAX_V2}/registered-models/delete-tag`, { body: { name, key: FLAG } }),
  }),
];
