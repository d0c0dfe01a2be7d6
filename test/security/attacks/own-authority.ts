import type { Attack, AttackContext } from '../harness/attack.js';
import { ok } from '../harness/http.js';
import { V2 } from '../harness/world.js';

/*
 * Class 4: routes where MLflow acts with its own authority on shared objects. Generating the demo
 * writes into the one experiment named "MLflow Demo" (whoever owns it) and deletes and re-registers
 * the `mlflow-demo.*` prompts; it is no create of the caller's own. Every other `create` and
 * `authenticated` row is pinned by test/unit/catalog-authority.test.ts.
 */
const DEMO_EXPERIMENT = 'MLflow Demo';
const AJAX_V3 = '/ajax-api/3.0/mlflow';
const VERSION_TAG = 'mlflow.demo.version.prompts';

/** The administrator's "MLflow Demo" experiment, with the prompts generator's version tag removed so a generate would write. */
async function adminsDemoExperiment(ctx: AttackContext): Promise<string> {
  const found = await ctx.admin('GET', `${V2}/experiments/get-by-name`, { query: { experiment_name: DEMO_EXPERIMENT } });
  const id =
    found.status === 200
      ? (found.json.experiment.experiment_id as string)
      : (ok(await ctx.admin('POST', `${V2}/experiments/create`, { body: { name: DEMO_EXPERIMENT } }), 'admin creates the demo experiment').experiment_id as string);
  const tags = (await ctx.mlflow('GET', `${V2}/experiments/get`, { query: { experiment_id: id } })).json?.experiment?.tags ?? [];
  if ((tags as Array<{ key: string }>).some((t) => t.key === VERSION_TAG))
    ok(await ctx.admin('POST', `${V2}/experiments/delete-experiment-tag`, { body: { experiment_id: id, key: VERSION_TAG } }), 'admin resets the version tag');
  return id;
}

const demoTags = async (ctx: AttackContext, id: string) =>
  JSON.stringify((await ctx.mlflow('GET', `${V2}/experiments/get`, { query: { experiment_id: id } })).json?.experiment?.tags ?? []);

export const ownAuthorityAttacks: readonly Attack[] = [
  {
    name: "demo/generate writes into the administrator's \"MLflow Demo\" experiment and re-registers the demo prompts: administrators only",
    class: '4 MLflow acting with its own authority',
    control: 'direct',
    async run(ctx) {
      const id = await adminsDemoExperiment(ctx);
      const before = await demoTags(ctx, id);
      const generated = await ctx.attack('POST', `${AJAX_V3}/demo/generate`, { body: { features: ['prompts'] } });
      if (generated.status < 300) ctx.flag(`demo/generate answered ${generated.status} for mallory`);
      if ((await demoTags(ctx, id)) !== before) ctx.flag("mallory's demo/generate changed the administrator's demo experiment");
    },
  },
  {
    name: 'demo/delete hard-deletes the shared demo data: administrators only',
    class: '4 MLflow acting with its own authority',
    control: 'none',
    async run(ctx) {
      const id = await adminsDemoExperiment(ctx);
      const deleted = await ctx.attack('POST', `${AJAX_V3}/demo/delete`, { body: {} });
      if (deleted.status < 300) ctx.flag(`demo/delete answered ${deleted.status} for mallory`);
      const still = await ctx.mlflow('GET', `${V2}/experiments/get`, { query: { experiment_id: id } });
      if (still.json?.experiment?.lifecycle_stage !== 'active') ctx.flag("mallory's demo/delete removed the administrator's demo experiment");
    },
  },
];
