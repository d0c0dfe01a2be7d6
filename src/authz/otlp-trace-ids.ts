import { gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import protobuf from 'protobufjs/light.js';
import { badRequest } from '../errors.js';

/**
 * The MLflow trace ids an OTLP export writes to, read as MLflow's `/v1/traces` reads them: the body
 * decompressed by its Content-Encoding, parsed as protobuf or as OTLP JSON, each span's trace id
 * turned into `tr-<32 hex digits>`. MLflow merges spans into an existing trace of that id wherever
 * it lives, so these ids must be authorized, not only the experiment header.
 */

const schema = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    ResourceSpans: { fields: { scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    Span: { fields: { traceId: { type: 'bytes', id: 1 } } },
  },
});
const ExportRequest = schema.lookupType('ExportTraceServiceRequest');

interface Decoded {
  resourceSpans?: Array<{ scopeSpans?: Array<{ spans?: Array<{ traceId?: Uint8Array }> }> }>;
}

export function otlpTraceIds(raw: Buffer, contentType: string | undefined, contentEncoding: string | undefined, maxBytes: number): string[] {
  const body = decompress(raw, contentEncoding, maxBytes);
  const media = contentType?.split(';')[0]!.trim().toLowerCase();
  const ids = new Set<string>();
  if (media === 'application/x-protobuf') {
    let decoded: Decoded;
    try {
      decoded = ExportRequest.toObject(ExportRequest.decode(body)) as Decoded;
    } catch {
      throw badRequest('Invalid OpenTelemetry format');
    }
    for (const resource of decoded.resourceSpans ?? [])
      for (const scope of resource.scopeSpans ?? []) for (const span of scope.spans ?? []) if (span.traceId?.length) ids.add(traceIdOf(span.traceId));
    return [...ids];
  }
  if (media === 'application/json') {
    for (const hex of jsonTraceIds(body)) ids.add(traceIdOf(Buffer.from(hex, 'hex')));
    return [...ids];
  }
  throw badRequest('Invalid Content-Type for OTLP: expected application/x-protobuf or application/json');
}

/** MLflow reads the id as a big-endian integer and formats it as at least 32 hex digits. */
function traceIdOf(bytes: Uint8Array): string {
  const hex = Buffer.from(bytes).toString('hex').replace(/^0+/, '');
  return `tr-${hex.padStart(32, '0')}`;
}

/**
 * MLflow converts hex ids only under the spec's camelCase keys and lets protobuf's JSON parser read
 * the snake_case spellings as base64; those would name other traces than they seem to, so only the
 * spec's spelling is accepted.
 */
function jsonTraceIds(body: Buffer): string[] {
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw badRequest('Invalid OpenTelemetry format');
  }
  const out: string[] = [];
  for (const resource of list(data, 'resourceSpans', 'resource_spans'))
    for (const scope of list(resource, 'scopeSpans', 'scope_spans'))
      for (const span of list(scope, 'spans', 'spans')) {
        if (typeof span !== 'object' || span === null) continue;
        if (Object.hasOwn(span, 'trace_id')) throw snakeCase();
        const id = (span as { traceId?: unknown }).traceId;
        if (id === undefined || id === null || id === '') continue;
        // Python's bytes.fromhex skips ASCII whitespace between digit pairs.
        const hex = typeof id === 'string' ? id.replace(/[ \t\n\r\v\f]/g, '') : '';
        if (!/^(?:[0-9a-fA-F]{2})+$/.test(hex)) throw badRequest('Invalid OpenTelemetry format: traceId must be hex');
        out.push(hex);
      }
  return out;
}

function list(node: unknown, key: string, snake: string): unknown[] {
  if (typeof node !== 'object' || node === null) return [];
  if (snake !== key && Object.hasOwn(node, snake)) throw snakeCase();
  const value = (node as Record<string, unknown>)[key];
  return Array.isArray(value) ? value : [];
}

const snakeCase = () => badRequest('OTLP JSON must use the specification\'s camelCase field names (resourceSpans, scopeSpans, traceId)');

function decompress(raw: Buffer, encoding: string | undefined, maxBytes: number): Buffer {
  const how = encoding?.trim().toLowerCase();
  if (!how || how === 'identity') return raw;
  const options = { maxOutputLength: maxBytes };
  try {
    if (how === 'gzip') return gunzipSync(raw, options);
    if (how === 'deflate') {
      try {
        return inflateSync(raw, options);
      } catch {
        return inflateRawSync(raw, options);
      }
    }
  } catch {
    throw badRequest(`Failed to decompress ${how} payload (or it is larger than ${maxBytes} bytes)`);
  }
  throw badRequest(`Unsupported Content-Encoding for OTLP: ${how}`);
}
