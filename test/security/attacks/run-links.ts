import type { Attack, AttackContext } from '../harness/attack.js';
import { loggedModelsFromRun, modelsNamedByRun, tracesUnderRun } from '../harness/links.js';
import { newTraceHex, randomHex, traceInfo, V2, V3 } from '../harness/world.js';

/*
 * Class 10: objects of the attacker's own that point at S's run, trace or logged model. MLflow then
 * shows them with S's objects (a logged model on the run's page, traces under the run) or S's
 * trace under her run. Writing such a reference takes EDIT on what it points at, as linking a
 * trace to a run does.
 */
const link = (name: string, attempt: (ctx: AttackContext) => Promise<void>): Attack => ({
  name,
  class: '10 references to S objects',
  control: 'direct',
  run: attempt,
});

/** Runs `act` and flags the traces of M it put under S's run (earlier attacks may have left some there). */
async function flagNewTracesUnderVictimRun(ctx: AttackContext, act: () => Promise<unknown>): Promise<void> {
  const m = await ctx.own.experiment();
  const before = new Set(await tracesUnderRun(ctx.mlflow, m, ctx.target.runId));
  await act();
  const added = (await tracesUnderRun(ctx.mlflow, m, ctx.target.runId)).filter((id) => !before.has(id));
  if (added.length > 0) ctx.flag(`MLflow lists mallory's traces ${added.join(', ')} under S's run ${ctx.target.runId}`);
}

const loggedModelFromVictimRun = (name: string, prefix: '/api' | '/ajax-api', body: (ctx: AttackContext, experimentId: string) => unknown) =>
  link(name, async (ctx) => {
    const m = await ctx.own.experiment();
    const before = new Set(await loggedModelsFromRun(ctx.mlflow, m, ctx.target.runId));
    await ctx.attack('POST', `${prefix}/2.0/mlflow/logged-models`, { body: body(ctx, m) });
    const made = (await loggedModelsFromRun(ctx.mlflow, m, ctx.target.runId)).filter((id) => !before.has(id));
    if (made.length > 0) ctx.flag(`logged models ${made.join(', ')} in M name S's run ${ctx.target.runId} as their source`);
  });

const namesVictimModel = (name: string, path: 'log-inputs' | 'outputs') =>
  link(name, async (ctx) => {
    const run = await ctx.own.run();
    await ctx.attack('POST', `${V2}/runs/${path}`, { body: { run_id: run, models: [{ model_id: ctx.target.loggedModelId, ...(path === 'outputs' ? { step: 0 } : {}) }] } });
    if ((await modelsNamedByRun(ctx.mlflow, run)).includes(ctx.target.loggedModelId)) ctx.flag(`mallory's run ${run} names S's logged model ${ctx.target.loggedModelId}`);
  });

export const runLinkAttacks: Attack[] = [
  loggedModelFromVictimRun('logged-models create in M with source_run_id of S run', '/api', (ctx, m) => ({ experiment_id: m, name: `lm-${randomHex(3)}`, source_run_id: ctx.target.runId })),
  loggedModelFromVictimRun('logged-models create in M with sourceRunId (camelCase) of S run', '/api', (ctx, m) => ({ experiment_id: m, name: `lm-${randomHex(3)}`, sourceRunId: ctx.target.runId })),
  loggedModelFromVictimRun('logged-models create in M with source_run_id of S run (ajax-api)', '/ajax-api', (ctx, m) => ({ experiment_id: m, name: `lm-${randomHex(3)}`, source_run_id: ctx.target.runId })),
  loggedModelFromVictimRun('logged-models create in M with source_run_id of S run (double-encoded body)', '/api', (ctx, m) =>
    JSON.stringify({ experiment_id: m, name: `lm-${randomHex(3)}`, source_run_id: ctx.target.runId }),
  ),

  link('v3 start trace in M with trace_metadata mlflow.sourceRun of S run', async (ctx) => {
    const started = traceInfo(`tr-${newTraceHex()}`, await ctx.own.experiment());
    const body = { trace: { trace_info: { ...started.trace.trace_info, trace_metadata: { 'mlflow.sourceRun': ctx.target.runId } } } };
    await flagNewTracesUnderVictimRun(ctx, () => ctx.attack('POST', `${V3}/traces`, { body }));
  }),
  link('v3 start trace in M with traceMetadata (camelCase) mlflow.sourceRun of S run (ajax-api)', async (ctx) => {
    const traceInfo = {
      traceId: `tr-${newTraceHex()}`,
      traceLocation: { type: 'MLFLOW_EXPERIMENT', mlflowExperiment: { experimentId: await ctx.own.experiment() } },
      requestTime: new Date().toISOString(),
      executionDuration: '1s',
      state: 'OK',
      traceMetadata: { 'mlflow.sourceRun': ctx.target.runId },
    };
    await flagNewTracesUnderVictimRun(ctx, () => ctx.attack('POST', '/ajax-api/3.0/mlflow/traces', { body: { trace: { traceInfo } } }));
  }),
  link('v2 end own trace with request_metadata mlflow.sourceRun of S run', async (ctx) => {
    const started = await ctx.mallory('POST', `${V2}/traces`, { body: { experiment_id: await ctx.own.experiment(), timestamp_ms: Date.now() } });
    const id = started.json?.trace_info?.request_id as string | undefined;
    if (!id) throw new Error(`v2 start trace failed: ${started.text.slice(0, 200)}`);
    const body = { timestamp_ms: Date.now(), status: 'OK', request_metadata: [{ key: 'mlflow.sourceRun', value: ctx.target.runId }] };
    await flagNewTracesUnderVictimRun(ctx, () => ctx.attack('PATCH', `${V2}/traces/${id}`, { body }));
  }),
  link('v2 start trace in M with request_metadata mlflow.sourceRun of S run', async (ctx) => {
    const body = { experiment_id: await ctx.own.experiment(), timestamp_ms: Date.now(), request_metadata: [{ key: 'mlflow.sourceRun', value: ctx.target.runId }] };
    await flagNewTracesUnderVictimRun(ctx, () => ctx.attack('POST', `${V2}/traces`, { body }));
  }),

  link('traces/link-to-run: own trace to S run', async (ctx) => {
    const own = await ctx.own.trace();
    await flagNewTracesUnderVictimRun(ctx, () => ctx.attack('POST', `${V2}/traces/link-to-run`, { body: { trace_ids: [own], run_id: ctx.target.runId } }));
  }),
  link('traces/link-to-run: S trace to own run', async (ctx) => {
    const run = await ctx.own.run();
    await ctx.attack('POST', `${V2}/traces/link-to-run`, { body: { trace_ids: [ctx.target.artifactTraceId], run_id: run } });
    const linked = await tracesUnderRun(ctx.mlflow, ctx.target.experimentId, run);
    if (linked.length > 0) ctx.flag(`S's traces ${linked.join(', ')} are linked to mallory's run ${run}`);
  }),

  namesVictimModel('runs/log-inputs on own run naming S logged model (models[].model_id)', 'log-inputs'),
  namesVictimModel('runs/outputs on own run naming S logged model (models[].model_id)', 'outputs'),
];
