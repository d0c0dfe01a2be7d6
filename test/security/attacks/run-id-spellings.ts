import type { Attack, AttackContext } from '../harness/attack.js';
import type { CallOptions } from '../harness/http.js';
import { V2 } from '../harness/world.js';

/*
 * Class 12: S's run named under `run_uuid`, the old spelling of `run_id`, by requests about the
 * attacker's own run. MLflow's handlers take `run_id` when it is set and `run_uuid` otherwise, so
 * her own run id in `run_id` keeps MLflow on her run, and S's id alone reaches S.
 */
type Step = (ctx: AttackContext, ownRun: string) => readonly [method: string, path: string, options: CallOptions];

const spelled = (name: string, control: Attack['control'], ...steps: Step[]): Attack => ({
  name,
  class: '12 run id spellings',
  control,
  async run(ctx) {
    const own = await ctx.own.run();
    for (const step of steps) {
      const [method, path, options] = step(ctx, own);
      await ctx.attack(method, path, options);
    }
  },
});

const victim = (ctx: AttackContext) => ctx.target.runId;

const setTagBoth: Step = (ctx, own) => ['POST', `${V2}/runs/set-tag`, { body: { run_id: own, run_uuid: victim(ctx), key: 'planted', value: 'by-mallory' } }];
const updateBoth: Step = (ctx, own) => ['POST', `${V2}/runs/update`, { body: { run_id: own, run_uuid: victim(ctx), run_name: 'renamed-by-mallory' } }];
const updateOld: Step = (ctx) => ['POST', `${V2}/runs/update`, { body: { run_uuid: victim(ctx), run_name: 'renamed-by-mallory' } }];
const getOld: Step = (ctx) => ['GET', `${V2}/runs/get`, { query: { run_uuid: victim(ctx) } }];
const getBoth: Step = (ctx, own) => ['GET', `${V2}/runs/get`, { query: { run_id: own, run_uuid: victim(ctx) } }];
const artifactOld: Step = (ctx) => ['GET', '/get-artifact', { query: { run_uuid: victim(ctx), path: 'secret.txt' } }];
const artifactBoth: Step = (ctx, own) => ['GET', '/get-artifact', { query: { run_id: own, run_uuid: victim(ctx), path: 'secret.txt' } }];
const historyOld: Step = (ctx) => ['GET', `${V2}/metrics/get-history`, { query: { run_uuid: victim(ctx), metric_key: `${ctx.target.prefix}metric` } }];

export const runIdSpellingAttacks: Attack[] = [
  spelled('runs/set-tag own run_id with S run as run_uuid', 'mlflow-refuses', setTagBoth),
  spelled('runs/update own run_id with S run as run_uuid', 'mlflow-refuses', updateBoth),
  spelled('runs/get own run_id with S run as run_uuid', 'mlflow-refuses', getBoth),
  spelled('get-artifact own run_id with S run as run_uuid', 'mlflow-refuses', artifactBoth),
  spelled('runs/update S run named only as run_uuid', 'direct', updateOld),
  spelled('runs/get S run named only as run_uuid', 'direct', getOld),
  spelled('get-artifact S run named only as run_uuid', 'direct', artifactOld),
  spelled('metrics/get-history S run named only as run_uuid', 'direct', historyOld),
  spelled('chain: own run, set-tag and update with S run_uuid beside own run_id, then update and read S through run_uuid alone', 'direct', setTagBoth, updateBoth, updateOld, getOld, artifactOld),
];
