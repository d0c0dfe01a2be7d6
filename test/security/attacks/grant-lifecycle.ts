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

/** The admin's model or prompt; `marked`: tagged with the world's marker, for one mallory must never read. */
async function adminModel(ctx: AttackContext, kind: Kind, name: string, grantAliceRead = true, marked = true): Promise<void> {
  const tags = kind === 'prompts' ? [{ key: 'mlflow.prompt.is_prompt', value: 'true' }] : [];
  if (marked) tags.push({ key: 'secret', value: `${ctx.target.prefix}squat-${name}` });
  ok(await ctx.admin('POST', `${V2}/registered-models/create`, { body: { name, tags } }), 'admin creates');
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

/*
 * Without pattern grants a rename needs only EDIT (with any, MANAGE: this runs before any exists), and
 * grants can sit on a name MLflow does not have (given ahead of time,
 * left by a model deleted outside flowgate, or granted by a pattern's MANAGE holder). Mallory, an
 * editor of the admin's model through a group, holds MANAGE directly on a free name (of both kinds)
 * and renames the model into it: the grants on the new name must be pruned, not merged, so she can
 * neither delete the renamed model nor manage its grants.
 */
const renamedOntoStaleGrant = (kind: Kind): Attack => ({
  name: `${kind}: mallory, an editor through a group, renames the admin's model onto a name she holds MANAGE on`,
  class: '6 grant lifecycle',
  control: 'none',
  async run(ctx) {
    const name = `prod-${kind}-${randomHex(4)}`;
    const renamed = `${name}-v2`;
    // Not marked: mallory may read it (she edits it), and the rename answers it.
    await adminModel(ctx, kind, name, true, false);
    const group = `editors-${randomHex(4)}`;
    ok(await ctx.admin('POST', `${V2}/permissions/groups/${group}/${kind}/${encodeURIComponent(name)}`, { body: { permission: 'EDIT' } }), 'grant the group EDIT');
    ok(await ctx.admin('POST', `${V2}/permissions/groups/${group}/users`, { body: { username: 'mallory' } }), 'mallory joins the group');
    if ((await ctx.mlflow('GET', `${V2}/registered-models/get`, { query: { name: renamed } })).status !== 404) throw new Error(`MLflow has ${renamed} already`);
    for (const side of ['registered-models', 'prompts'] as const)
      ok(await ctx.admin('POST', `${V2}/permissions/users/mallory/${side}/${encodeURIComponent(renamed)}`, { body: { permission: 'MANAGE' } }), `mallory's MANAGE on the free name (${side})`);
    const mark = ((await ctx.admin('GET', `${V2}/permissions/audit`, { query: { max_results: '1' } })).json as { entries: Array<{ id: number }> }).entries[0]?.id ?? 0;

    ok(await ctx.mallory('POST', `${V2}/registered-models/rename`, { body: { name, new_name: renamed } }), 'mallory renames the model with her EDIT');
    if ((await ctx.mlflow('GET', `${V2}/registered-models/get`, { query: { name: renamed } })).status !== 200) throw new Error('MLflow did not rename the model');

    for (const side of ['registered-models', 'prompts'] as const)
      if ((await usersOn(ctx, side, renamed)).some((u) => u.username === 'mallory')) ctx.flag(`${renamed}: mallory's stale MANAGE (${side}) was merged into the renamed model's grants`);
    if (!(await usersOn(ctx, kind, renamed)).some((u) => u.username === 'alice' && u.permission === 'READ')) ctx.flag(`${renamed}: alice's grant did not follow the rename`);
    const groups = (ok(await ctx.admin('GET', `${V2}/permissions/${kind}/${encodeURIComponent(renamed)}/groups`), 'groups on the new name').groups ?? []) as Array<{ group_name: string; permission: string }>;
    if (!groups.some((g) => g.group_name === group && g.permission === 'EDIT')) ctx.flag(`${renamed}: the group's EDIT did not follow the rename`);

    const aliceGrant = `${V2}/permissions/users/alice/${kind}/${encodeURIComponent(renamed)}`;
    const raised = await ctx.mallory('PATCH', aliceGrant, { body: { permission: 'MANAGE' } });
    if (raised.status < 400) ctx.flag(`mallory changes a grant on the renamed model (${raised.status})`);
    const listed = await ctx.mallory('GET', `${V2}/permissions/${kind}/${encodeURIComponent(renamed)}/users`);
    if (listed.status < 400) ctx.flag(`mallory lists the renamed model's grants (${listed.status})`);
    const revoked = await ctx.mallory('DELETE', aliceGrant);
    if (revoked.status < 400) ctx.flag(`mallory revokes a grant on the renamed model (${revoked.status})`);
    const deleted = await ctx.mallory('DELETE', `${V2}/registered-models/delete`, { body: { name: renamed } });
    if (deleted.status < 400 || (await ctx.mlflow('GET', `${V2}/registered-models/get`, { query: { name: renamed } })).status !== 200)
      ctx.flag(`mallory deletes the renamed model (${deleted.status})`);

    const entries = ((await ctx.admin('GET', `${V2}/permissions/audit`, { query: { max_results: '100' } })).json as {
      entries: Array<{ id: number; action: string; target: string; actor: string }>;
    }).entries.filter((e) => e.id > mark);
    const pruned = entries.filter((e) => e.action === 'grant.prune-stale' && e.actor === 'mallory' && e.target.endsWith(`:${renamed}`));
    if (pruned.length !== 2) ctx.flag(`the audit log shows ${pruned.length} grant.prune-stale entries on ${renamed} (of its two kinds), not 2`);
  },
});

/** A rename to the name the model already has moves nothing, and must not drop the model's grants either. */
const renamedOntoItself = (kind: Kind): Attack => ({
  name: `${kind}: mallory, an editor, renames the admin's model to its own name`,
  class: '6 grant lifecycle',
  control: 'none',
  async run(ctx) {
    const name = `same-${kind}-${randomHex(4)}`;
    await adminModel(ctx, kind, name, true, false);
    ok(await ctx.admin('POST', `${V2}/permissions/users/mallory/${kind}/${encodeURIComponent(name)}`, { body: { permission: 'EDIT' } }), 'grant mallory EDIT');
    const before = (await usersOn(ctx, kind, name)).map((u) => `${u.username}=${u.permission}`).sort();
    await ctx.mallory('POST', `${V2}/registered-models/rename`, { body: { name, new_name: name } });
    const after = (await usersOn(ctx, kind, name)).map((u) => `${u.username}=${u.permission}`).sort();
    if (after.join() !== before.join()) ctx.flag(`${name}: a rename onto itself changed its grants from ${before.join()} to ${after.join()}`);
  },
});

export const grantLifecycleAttacks: Attack[] = [
  deletedThenTaken('registered-models', 'create'),
  deletedThenTaken('registered-models', 'rename'),
  deletedThenTaken('prompts', 'create'),
  deletedThenTaken('prompts', 'rename'),
  renamedThenTaken('registered-models', 'new_name'),
  renamedThenTaken('prompts', 'new_name'),
  staleOwnGrant('DELETE with a double-encoded body', (ctx, name) => ctx.mallory('DELETE', `${V2}/registered-models/delete`, { body: JSON.stringify({ name }) })),
  staleOwnGrant('DELETE on the ajax-api twin', (ctx, name) => ctx.mallory('DELETE', `/ajax-api/2.0/mlflow/registered-models/delete`, { body: { name } })),
  renamedOntoStaleGrant('registered-models'),
  renamedOntoStaleGrant('prompts'),
  renamedOntoItself('registered-models'),
  renamedOntoItself('prompts'),
];
