import type { Attack } from '../harness/attack.js';

/*
 * Class 1: a logged model of the attacker's own in the path, the victim's in the body. MLflow's
 * finalize and params handlers act on the body's `model_id`.
 */
const READY = 'LOGGED_MODEL_READY';

const finalize = (name: string, prefix: '/api' | '/ajax-api', body: (victim: string) => unknown, control: Attack['control'] = 'direct'): Attack => ({
  name,
  class: '1 logged model id in body',
  control,
  async run(ctx) {
    const own = await ctx.own.loggedModel();
    await ctx.attack('PATCH', `${prefix}/2.0/mlflow/logged-models/${own}`, { body: body(ctx.target.loggedModelId) });
  },
});

export const loggedModelAttacks: Attack[] = [
  finalize('finalize own model, victim model_id in body', '/api', (victim) => ({ model_id: victim, status: READY })),
  finalize('finalize own model, victim model_id in body (ajax-api)', '/ajax-api', (victim) => ({ model_id: victim, status: READY })),
  // MLflow's required-field check reads only the proto name, so the camelCase form is refused.
  finalize('finalize own model, victim modelId (camelCase) in body', '/api', (victim) => ({ modelId: victim, status: READY }), 'mlflow-refuses'),
  finalize('finalize own model, victim model_id in a double-encoded body', '/api', (victim) => JSON.stringify({ model_id: victim, status: READY })),
  {
    name: 'log params on own model, victim model_id in body (MLflow acts on the path id)',
    class: '1 logged model id in body',
    control: 'mlflow-refuses',
    async run(ctx) {
      const own = await ctx.own.loggedModel();
      await ctx.attack('POST', `/api/2.0/mlflow/logged-models/${own}/params`, {
        body: { model_id: ctx.target.loggedModelId, params: [{ key: 'planted', value: 'by-mallory' }] },
      });
    },
  },
  {
    name: 'log a metric on own run attached to the victim logged model (modelId camelCase)',
    class: '1 logged model id in body',
    control: 'direct',
    async run(ctx) {
      const run = await ctx.own.run();
      await ctx.attack('POST', '/api/2.0/mlflow/runs/log-metric', {
        body: { run_id: run, key: 'planted', value: 1, timestamp: Date.now(), step: 0, modelId: ctx.target.loggedModelId },
      });
    },
  },
];
