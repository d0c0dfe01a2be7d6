import type { Attack, AttackContext } from '../harness/attack.js';
import { ok } from '../harness/http.js';
import { randomHex, V2 } from '../harness/world.js';

/*
 * Class 6: deleting or renaming a registered model or prompt with the body sent as a JSON string
 * (MLflow decodes it a second time). flowgate must drop or move the grants all the same, so a new
 * resource under the old name inherits nobody's grants (grant squatting).
 */
type Kind = 'registered-models' | 'prompts';

async function usersOn(ctx: AttackContext, kind: Kind, name: string): Promise<Array<{ username: string; permission: string }>> {
  return ok(await ctx.admin('GET', `${V2}/permissions/${kind}/${encodeURIComponent(name)}/users`), `grants on ${name}`).users ?? [];
}

async function adminModel(ctx: AttackContext, kind: Kind, name: string, grantAliceRead = true): Promise<void> {
  const tags = kind === 'prompts' ? [{ key: 'mlflow.prompt.is_prompt', value: 'true' }] : [];
  ok(await ctx.admin('POST', `${V2}/registered-models/create`, { body: { name, tags: [...tags, { key: 'secret', value: `${ctx.target.prefix}squat-${name}` }] } }), 'admin creates');
  if (grantAliceRead) ok(await ctx.admin('POST', `${V2}/permissions/users/alice/${kind}/${encodeURIComponent(name)}`, { body: { permission: 'READ' } }), 'grant alice');
}

function onlyMallory(ctx: AttackContext, users: Array<{ username: string }>, where: string): void {
  const others = users.filter((u) => u.username !== 'mallory');
  if (others.length > 0) ctx.flag(`${where}: mallory's new resource carries old grants of ${others.map((u) => u.username).join(', ')}`);
}

const deletedThenTaken = (kind: Kind, how: 'create' | 'rename'): Attack => ({
  name: `${kind} deleted with a double-encoded body, then mallory ${how === 'create' ? 'creates' : 'renames her own into'} the same name`,
  class: '6 grant lifecycle',
  control: 'none',
  async run(ctx) {
    const name = `squat-${kind}-${randomHex(4)}`;
    await adminModel(ctx, kind, name);
    ok(await ctx.admin('DELETE', `${V2}/registered-models/delete`, { body: JSON.stringify({ name }) }), 'admin deletes with a JSON string body');
    if ((await ctx.mlflow('GET', `${V2}/registered-models/get`, { query: { name } })).status !== 404) throw new Error('MLflow did not delete the model');
    const tags = kind === 'prompts' ? [{ key: 'mlflow.prompt.is_prompt', value: 'true' }] : [];
    if (how === 'create') ok(await ctx.mallory('POST', `${V2}/registered-models/create`, { body: { name, tags } }), 'mallory creates the name');
    else {
      const mine = `mine-${randomHex(4)}`;
      ok(await ctx.mallory('POST', `${V2}/registered-models/create`, { body: { name: mine, tags } }), 'mallory creates her own');
      ok(await ctx.mallory('POST', `${V2}/registered-models/rename`, { body: JSON.stringify({ name: mine, new_name: name }) }), 'mallory renames hers');
    }
    onlyMallory(ctx, await usersOn(ctx, kind, name), name);
  },
});

// MLflow's required-field check reads only `new_name`: a camelCase `newName` rename is refused by MLflow.
const renamedThenTaken = (kind: Kind, spelling: 'new_name'): Attack => ({
  name: `${kind} renamed with a double-encoded body (${spelling}), then mallory creates the old name`,
  class: '6 grant lifecycle',
  control: 'none',
  async run(ctx) {
    const name = `moved-${kind}-${randomHex(4)}`;
    const renamed = `${name}-new`;
    await adminModel(ctx, kind, name);
    ok(await ctx.admin('POST', `${V2}/registered-models/rename`, { body: JSON.stringify({ name, [spelling]: renamed }) }), 'admin renames');
    if ((await ctx.mlflow('GET', `${V2}/registered-models/get`, { query: { name: renamed } })).status !== 200) throw new Error('MLflow did not rename the model');
    if (!(await usersOn(ctx, kind, renamed)).some((u) => u.username === 'alice')) ctx.flag(`${renamed}: alice's grant did not follow the rename`);
    const tags = kind === 'prompts' ? [{ key: 'mlflow.prompt.is_prompt', value: 'true' }] : [];
    ok(await ctx.mallory('POST', `${V2}/registered-models/create`, { body: { name, tags } }), 'mallory creates the old name');
    onlyMallory(ctx, await usersOn(ctx, kind, name), name);
    if ((await usersOn(ctx, kind, renamed)).some((u) => u.username === 'mallory')) ctx.flag(`${renamed}: mallory holds a grant on the renamed model`);
  },
});

/** Mallory deletes her own model in a spelling the grant hook might miss, then a victim model is renamed to that name. */
const staleOwnGrant = (how: string, send: (ctx: AttackContext, name: string) => Promise<unknown>): Attack => ({
  name: `mallory deletes her model (${how}); an admin model renamed to that name must not open to her`,
  class: '6 grant lifecycle',
  control: 'none',
  async run(ctx) {
    const bait = await ctx.own.model();
    await send(ctx, bait);
    if ((await ctx.mlflow('GET', `${V2}/registered-models/get`, { query: { name: bait } })).status !== 404) throw new Error('MLflow did not delete the model');
    const victim = `victim-${randomHex(4)}`;
    await adminModel(ctx, 'registered-models', victim, false);
    ok(await ctx.admin('POST', `${V2}/registered-models/rename`, { body: { name: victim, new_name: bait } }), 'admin renames into the name');
    const read = await ctx.attack('GET', `${V2}/registered-models/get`, { query: { name: bait } });
    if (read.status === 200) ctx.flag(`mallory reads the admin's model renamed to ${bait}`);
    onlyAdmin(ctx, await usersOn(ctx, 'registered-models', bait), bait);
  },
});

function onlyAdmin(ctx: AttackContext, users: Array<{ username: string }>, where: string): void {
  if (users.some((u) => u.username === 'mallory')) ctx.flag(`${where}: mallory's stale grant sits on the admin's model`);
}

export const grantLifecycleAttacks: Attack[] = [
  deletedThenTaken('registered-models', 'create'),
  deletedThenTaken('registered-models', 'rename'),
  deletedThenTaken('prompts', 'create'),
  deletedThenTaken('prompts', 'rename'),
  renamedThenTaken('registered-models', 'new_name'),
  renamedThenTaken('prompts', 'new_name'),
  staleOwnGrant('DELETE with a double-encoded body', (ctx, name) => ctx.mallory('DELETE', `${V2}/registered-models/delete`, { body: JSON.stringify({ name }) })),
  staleOwnGrant('DELETE on the ajax-api twin', (ctx, name) => ctx.mallory('DELETE', `/ajax-api/2.0/mlflow/registered-models/delete`, { body: { name } })),
];
