import type { Attack, AttackContext } from '../harness/attack.js';
import { V2 } from '../harness/world.js';

/**
 * A model version of the attacker's own model whose source lies among S's artifacts, then read
 * back through the model registry's artifact route.
 */
const register = (
  name: string,
  body: (ctx: AttackContext, model: string) => Record<string, unknown> | Promise<Record<string, unknown>>,
  read: string,
  doubleEncoded = false,
  prefix: '/api' | '/ajax-api' = '/api',
): Attack => ({
  name,
  class: '4 model version source',
  control: 'direct',
  async run(ctx) {
    const model = await ctx.own.model();
    const fields = await body(ctx, model);
    const created = await ctx.attack('POST', `${prefix}/2.0/mlflow/model-versions/create`, { body: doubleEncoded ? JSON.stringify(fields) : fields });
    const version = String(created.json?.model_version?.version ?? '1');
    await ctx.attack('GET', `${V2}/model-versions/get-download-uri`, { query: { name: model, version } });
    await ctx.attack('GET', '/model-versions/get-artifact', { query: { name: model, version, path: read } });
  },
});

const runModel = (ctx: AttackContext) => `mlflow-artifacts:/${ctx.target.experimentId}/${ctx.target.runId}/artifacts/model`;

/*
 * MLflow registers a version only when `run_id` (or `model_id`) names the object holding the source,
 * so the working forms name S's run or logged model; the others are neighbours MLflow refuses itself.
 */
const refused = (attack: Attack): Attack => ({ ...attack, control: 'mlflow-refuses' });
const loggedModelArtifacts = (ctx: AttackContext) => `mlflow-artifacts:/${ctx.target.experimentId}/models/${ctx.target.loggedModelId}/artifacts`;

export const modelSourceAttacks: Attack[] = [
  register('model version run_id of S run, source mlflow-artifacts:/<S>/<run>/artifacts/model', (ctx, name) => ({ name, source: runModel(ctx), run_id: ctx.target.runId }), 'MLmodel'),
  register('model version runId (camelCase) of S run, source in S', (ctx, name) => ({ name, source: runModel(ctx), runId: ctx.target.runId }), 'MLmodel'),
  register('model version run_id of S run, source in S (double-encoded body)', (ctx, name) => ({ name, source: runModel(ctx), run_id: ctx.target.runId }), 'MLmodel', true),
  register('model version model_id of S logged model, source models:/<id>', (ctx, name) => ({ name, source: `models:/${ctx.target.loggedModelId}`, model_id: ctx.target.loggedModelId }), 'secret.txt'),
  register('model version modelId (camelCase) of S logged model, source its artifacts', (ctx, name) => ({ name, source: loggedModelArtifacts(ctx), modelId: ctx.target.loggedModelId }), 'secret.txt'),
  register('model version run_id of S run, source in S (ajax-api)', (ctx, name) => ({ name, source: runModel(ctx), run_id: ctx.target.runId }), 'MLmodel', false, '/ajax-api'),
  register('model version model_id of S logged model, source its artifacts (snake_case)', (ctx, name) => ({ name, source: loggedModelArtifacts(ctx), model_id: ctx.target.loggedModelId }), 'secret.txt'),
  refused(register('model version source runs:/<S run>/model with own run_id', async (ctx, name) => ({ name, source: `runs:/${ctx.target.runId}/model`, run_id: await ctx.own.run() }), 'MLmodel')),
  refused(register('model version model_id of S logged model, source and run_id of own run', async (ctx, name) => {
    const run = await ctx.own.run();
    return { name, source: `mlflow-artifacts:/${await ctx.own.experiment()}/${run}/artifacts/model`, run_id: run, model_id: ctx.target.loggedModelId };
  }, 'MLmodel')),
  refused(register('model version source runs:/<S run>/model without run_id', (ctx, name) => ({ name, source: `runs:/${ctx.target.runId}/model` }), 'MLmodel')),
  refused(register('model version own run_id, source in S', async (ctx, name) => ({ name, source: runModel(ctx), run_id: await ctx.own.run() }), 'MLmodel')),
  refused(register('model version source mlflow-artifacts://host/<S>/... (authority form)', (ctx, name) => ({
    name,
    source: runModel(ctx).replace('mlflow-artifacts:/', 'mlflow-artifacts://127.0.0.1/'),
    run_id: ctx.target.runId,
  }), 'MLmodel')),
  refused(register('model version source file:// URI of S run artifacts', (ctx, name) => ({
    name,
    source: `file://${ctx.stack.mlflow.artifactsDir}/${ctx.target.experimentId}/${ctx.target.runId}/artifacts/model`,
    run_id: ctx.target.runId,
  }), 'MLmodel')),
  refused(register('model version source bare path of S run artifacts', (ctx, name) => ({
    name,
    source: `${ctx.stack.mlflow.artifactsDir}/${ctx.target.experimentId}/${ctx.target.runId}/artifacts/model`,
    run_id: ctx.target.runId,
  }), 'MLmodel')),
];
