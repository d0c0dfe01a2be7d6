import type { Attack, AttackContext } from '../harness/attack.js';

/**
 * Class 8: a dataset of S and of an experiment the attacker may read. Found by searching the one she
 * may read, it must not be listed (its name and tags carry S's marker).
 */
const search = (name: string, method: 'GET' | 'POST', prefix: string, input: (ctx: AttackContext) => { query?: Record<string, string | string[]>; body?: unknown }): Attack => ({
  name,
  class: '8 dataset search',
  control: 'direct',
  async run(ctx) {
    await ctx.attack(method, `${prefix}/3.0/mlflow/datasets/search`, input(ctx));
  },
});

export const datasetAttacks: Attack[] = [
  {
    name: 'attach own dataset to S (add-experiments)',
    class: '8 dataset search',
    control: 'direct',
    async run(ctx) {
      const created = await ctx.mallory('POST', '/api/3.0/mlflow/datasets/create', { body: { name: `mine-${Date.now()}`, experiment_ids: [await ctx.own.experiment()] } });
      const id = created.json?.dataset?.dataset_id as string;
      await ctx.attack('POST', `/api/3.0/mlflow/datasets/${id}/add-experiments`, { body: { dataset_id: id, experiment_ids: [ctx.target.experimentId] } });
    },
  },
  search('POST datasets/search experiment_ids=[shared]', 'POST', '/api', (ctx) => ({ body: { experiment_ids: [ctx.target.sharedExperimentId] } })),
  search('GET datasets/search experiment_ids=shared', 'GET', '/api', (ctx) => ({ query: { experiment_ids: ctx.target.sharedExperimentId } })),
  search('POST datasets/search (ajax-api)', 'POST', '/ajax-api', (ctx) => ({ body: { experiment_ids: [ctx.target.sharedExperimentId] } })),
  search('GET datasets/search (ajax-api)', 'GET', '/ajax-api', (ctx) => ({ query: { experiment_ids: ctx.target.sharedExperimentId } })),
  search('POST datasets/search experimentIds (camelCase)', 'POST', '/api', (ctx) => ({ body: { experimentIds: [ctx.target.sharedExperimentId] } })),
  search('POST datasets/search (double-encoded body)', 'POST', '/api', (ctx) => ({ body: JSON.stringify({ experiment_ids: [ctx.target.sharedExperimentId] }) })),
  // Scoped only where MLflow does not read it (a GET's query under the camelCase name, a POST's query string):
  // MLflow searches every dataset on the server.
  search('GET datasets/search experimentIds=shared (camelCase query)', 'GET', '/api', (ctx) => ({ query: { experimentIds: ctx.target.sharedExperimentId } })),
  search('POST datasets/search?experiment_ids=shared with an empty body', 'POST', '/api', (ctx) => ({ query: { experiment_ids: ctx.target.sharedExperimentId }, body: {} })),
  {
    name: 'GET the shared dataset by id',
    class: '8 dataset search',
    control: 'direct',
    async run(ctx) {
      await ctx.attack('GET', `/api/3.0/mlflow/datasets/${ctx.target.sharedDatasetId}`);
      await ctx.attack('GET', `/api/3.0/mlflow/datasets/${ctx.target.sharedDatasetId}/records`);
    },
  },
];
