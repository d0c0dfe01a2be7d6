import type { Attack, AttackContext } from '../harness/attack.js';
import { ok } from '../harness/http.js';
import { randomHex, V2 } from '../harness/world.js';

/*
 * Class 12: pattern grants match names, and names change. mallory holds READ on every experiment
 * named `<team>/*`; she tries to bring the secret experiment under her pattern (rename it in), or to
 * make flowgate match her pattern against a name she chose rather than the name MLflow holds.
 */
async function patternFor(ctx: AttackContext): Promise<string> {
  const team = `team-${randomHex(4)}`;
  ok(
    await ctx.admin('POST', `${V2}/permissions/users/mallory/patterns`, { body: { resource_type: 'experiment', pattern: `${team}/*`, permission: 'READ' } }),
    'grant mallory a pattern',
  );
  return team;
}

const readsS = async (ctx: AttackContext, how: string) => {
  const read = await ctx.attack('GET', `${V2}/experiments/get`, { query: { experiment_id: ctx.target.experimentId } });
  if (read.status === 200) ctx.flag(`mallory reads the secret experiment ${how}`);
};

export const patternNameAttacks: readonly Attack[] = [
  {
    name: 'rename the secret experiment into her pattern: refused (a rename needs EDIT on it), and no read follows',
    class: '12 pattern names',
    control: 'none',
    async run(ctx) {
      const team = await patternFor(ctx);
      const renamed = await ctx.attack('POST', `${V2}/experiments/update`, { body: { experiment_id: ctx.target.experimentId, new_name: `${team}/stolen` } });
      if (renamed.status === 200) ctx.flag('mallory renamed the secret experiment');
      await readsS(ctx, 'after trying to rename it into her pattern');
    },
  },
  {
    name: 'her own experiment renamed in and out of the pattern, then the secret one asked for with a matching name in the request',
    class: '12 pattern names',
    control: 'none',
    async run(ctx) {
      const team = await patternFor(ctx);
      const own = ok(await ctx.mallory('POST', `${V2}/experiments/create`, { body: { name: `mine-${randomHex(4)}` } }), 'mallory creates').experiment_id as string;
      ok(await ctx.mallory('POST', `${V2}/experiments/update`, { body: { experiment_id: own, new_name: `${team}/mine` } }), 'rename hers into the pattern');
      ok(await ctx.mallory('GET', `${V2}/experiments/get`, { query: { experiment_id: own } }), 'mallory reads hers');
      ok(await ctx.mallory('POST', `${V2}/experiments/update`, { body: { experiment_id: own, new_name: `away-${randomHex(4)}` } }), 'rename hers out');
      // A name in the request is never what a pattern is matched against: only MLflow's name for the id.
      const named = await ctx.attack('GET', `${V2}/experiments/get`, { query: { experiment_id: ctx.target.experimentId, name: `${team}/mine` } });
      if (named.status === 200) ctx.flag('a name sent with the request decided');
      const byName = await ctx.attack('GET', `${V2}/experiments/get-by-name`, { query: { experiment_name: ctx.target.experimentName } });
      if (byName.status === 200) ctx.flag('mallory reads the secret experiment by its name');
      await readsS(ctx, 'after renaming her own in and out of the pattern');
    },
  },
];
