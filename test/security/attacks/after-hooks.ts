import { gzipSync } from 'node:zlib';
import { startTestFlowgate } from '../../helpers/flowgate.js';
import { eventually, scrape, sum } from '../../helpers/prom.js';
import type { Attack, AttackContext } from '../harness/attack.js';
import { caller, ok } from '../harness/http.js';
import { otlpProtobuf } from '../harness/otlp-proto.js';
import { newTraceHex, otlpJson, randomHex, traceInfo, V2, V3 } from '../harness/world.js';

/*
 * Class 11: a change recorded after MLflow's answer must not be lost, whatever the answer looks
 * like. An OTLP export is answered with an empty protobuf body; the hook that tells the other
 * flowgates on the store that the trace was written must run all the same. A second flowgate on the
 * stack's store has cached the trace in a readable experiment; the trace is deleted and written
 * again by OTLP into a hidden one; mallory asks the second flowgate for it.
 */
type Body = 'protobuf' | 'OTLP JSON' | 'gzipped protobuf';

function exportBody(shape: Body, hex: string, span: string): { raw: string | Uint8Array; headers: Record<string, string> } {
  if (shape === 'OTLP JSON') return { raw: otlpJson(hex, span), headers: { 'content-type': 'application/json' } };
  const proto = otlpProtobuf(hex, span);
  return shape === 'gzipped protobuf'
    ? { raw: gzipSync(proto), headers: { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' } }
    : { raw: proto, headers: { 'content-type': 'application/x-protobuf' } };
}

const hookFailures = async (ctx: AttackContext) => sum((await scrape(ctx.stack.fg.metricsUrl)).samples, 'flowgate_after_hook_failures_total');

const otlpSeenByAnotherFlowgate = (shape: Body): Attack => ({
  name: `trace rewritten into a hidden experiment by an OTLP export (${shape}) on one flowgate: a second flowgate on the same store judges it on its new experiment`,
  class: '11 after-hooks',
  control: 'none',
  async run(ctx) {
    const second = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: ctx.stack.mlflow.url, FLOWGATE_STORE_WATCH_MS: '50' }, ctx.stack.fg.dir);
    try {
      const failuresBefore = await hookFailures(ctx);
      const viaSecond = caller(second.url, ctx.stack.users.mallory!.auth, (e) => {
        if (e.text.includes(ctx.target.prefix)) ctx.flag(`the second flowgate leaked the rewritten trace: ${e.method} ${new URL(e.url).pathname} → ${e.status}`);
      });
      const readable = ok(await ctx.admin('POST', `${V2}/experiments/create`, { body: { name: `readable-${randomHex(4)}` } }), 'admin creates R')
        .experiment_id as string;
      ok(await ctx.admin('POST', `${V2}/permissions/users/mallory/experiments/${readable}`, { body: { permission: 'READ' } }), 'grant mallory R');
      const hidden = ok(
        await ctx.admin('POST', `${V2}/experiments/create`, { body: { name: `hidden-${randomHex(4)}`, tags: [{ key: 'secret', value: `${ctx.target.prefix}otlp-hidden` }] } }),
        'admin creates H',
      ).experiment_id as string;
      const hex = newTraceHex();
      const id = `tr-${hex}`;
      ok(await ctx.admin('POST', `${V3}/traces`, { body: traceInfo(id, readable) }), 'admin starts the trace in R');
      // The second flowgate follows the grant within its watch interval, then caches the trace in R.
      await eventually(async () => ok(await viaSecond('GET', `${V3}/traces/${id}`), 'mallory reads it through the second flowgate'));

      ok(await ctx.admin('POST', `${V3}/traces/delete-traces`, { body: { experiment_id: readable, request_ids: [id] } }), 'admin deletes it');
      const body = exportBody(shape, hex, `${ctx.target.prefix}otlp-span`);
      ok(await ctx.admin('POST', '/v1/traces', { raw: body.raw, headers: { ...body.headers, 'x-mlflow-experiment-id': hidden } }), 'admin exports it into H');
      const moved = await ctx.mlflow('GET', `${V3}/traces/${id}`);
      if (moved.json?.trace?.trace_info?.trace_location?.mlflow_experiment?.experiment_id !== hidden) throw new Error('MLflow did not write the trace into H');

      // Well past the second flowgate's watch interval.
      await new Promise((r) => setTimeout(r, 500));
      for (const [path, query] of [
        [`${V3}/traces/${id}`, {}],
        ['/ajax-api/3.0/mlflow/get-trace-artifact', { request_id: id }],
      ] as const) {
        const again = await viaSecond('GET', path, { query });
        if (again.status === 200) ctx.flag(`the second flowgate let mallory read the trace now in H at ${path}`);
      }
      const failed = (await hookFailures(ctx)) - failuresBefore;
      if (failed !== 0) ctx.flag(`${failed} after-hook failure(s) counted by flowgate_after_hook_failures_total`);
    } finally {
      await second.close();
    }
  },
});

export const afterHookAttacks: readonly Attack[] = [
  otlpSeenByAnotherFlowgate('protobuf'),
  otlpSeenByAnotherFlowgate('OTLP JSON'),
  otlpSeenByAnotherFlowgate('gzipped protobuf'),
];
