import { gunzipSync, inflateRawSync, inflateSync } from 'node:zlib';
import protobuf from 'protobufjs/light.js';
import { badRequest } from '../errors.js';

/**
 * What an OTLP export writes, read as MLflow's `/v1/traces` reads it: the body decompressed by its
 * Content-Encoding, parsed as protobuf or as OTLP JSON. MLflow merges spans into an existing trace
 * of the same id wherever it lives (each span's id becomes `tr-<32 hex digits>`), and turns span
 * attributes `mlflow.traceTag.<key>` and resource attributes into trace tags: both must be
 * authorized, not only the experiment header.
 */
export interface OtlpExport {
  readonly traceIds: readonly string[];
  /** The trace tag keys the export may set. */
  readonly tagKeys: readonly string[];
}

/** MLflow's prefix for span attributes that become trace tags. */
const TRACE_TAG_PREFIX = 'mlflow.traceTag.';

const schema = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 } } },
    Span: { fields: { traceId: { type: 'bytes', id: 1 }, attributes: { rule: 'repeated', type: 'KeyValue', id: 9 } } },
  },
});
const ExportRequest = schema.lookupType('ExportTraceServiceRequest');

interface Decoded {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key?: string }> };
    scopeSpans?: Array<{ spans?: Array<{ traceId?: Uint8Array; attributes?: Array<{ key?: string }> }> }>;
  }>;
}

/** One parse per body: the trace ids and the tag keys are asked for by different checks. */
const parsed = new WeakMap<Buffer, OtlpExport>();

export function readOtlpExport(raw: Buffer, contentType: string | undefined, contentEncoding: string | undefined, maxBytes: number): OtlpExport {
  let known = parsed.get(raw);
  if (known === undefined) parsed.set(raw, (known = parse(raw, contentType, contentEncoding, maxBytes)));
  return known;
}

export function otlpTraceIds(raw: Buffer, contentType: string | undefined, contentEncoding: string | undefined, maxBytes: number): string[] {
  return [...readOtlpExport(raw, contentType, contentEncoding, maxBytes).traceIds];
}

function parse(raw: Buffer, contentType: string | undefined, contentEncoding: string | undefined, maxBytes: number): OtlpExport {
  const body = decompress(raw, contentEncoding, maxBytes);
  const media = contentType?.split(';')[0]!.trim().toLowerCase();
  if (media === 'application/x-protobuf') {
    let decoded: Decoded;
    try {
      decoded = ExportRequest.toObject(ExportRequest.decode(body)) as Decoded;
    } catch {
      throw badRequest('Invalid OpenTelemetry format');
    }
    return collect(decoded, (id) => (id instanceof Uint8Array && id.length ? id : undefined));
  }
  if (media === 'application/json') return collect(jsonExport(body), (id) => (typeof id === 'string' && id !== '' ? hexBytes(id) : undefined));
  throw badRequest('Invalid Content-Type for OTLP: expected application/x-protobuf or application/json');
}

function collect(decoded: Decoded, idBytes: (id: unknown) => Uint8Array | undefined): OtlpExport {
  const ids = new Set<string>();
  const tagKeys = new Set<string>();
  for (const resource of decoded.resourceSpans ?? []) {
    for (const attribute of resource.resource?.attributes ?? []) if (typeof attribute.key === 'string') tagKeys.add(attribute.key);
    for (const scope of resource.scopeSpans ?? [])
      for (const span of scope.spans ?? []) {
        const id = idBytes(span.traceId);
        if (id) ids.add(traceIdOf(id));
        for (const attribute of span.attributes ?? [])
          if (typeof attribute.key === 'string' && attribute.key.toLowerCase().startsWith(TRACE_TAG_PREFIX.toLowerCase()))
            tagKeys.add(attribute.key.slice(TRACE_TAG_PREFIX.length));
      }
  }
  return { traceIds: [...ids], tagKeys: [...tagKeys] };
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
function jsonExport(body: Buffer): Decoded {
  let data: unknown;
  try {
    data = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw badRequest('Invalid OpenTelemetry format');
  }
  // Checked for the spellings MLflow would read differently; the shape is then the protobuf one.
  for (const resource of list(data, 'resourceSpans', 'resource_spans'))
    for (const scope of list(resource, 'scopeSpans', 'scope_spans'))
      for (const span of list(scope, 'spans', 'spans'))
        if (typeof span === 'object' && span !== null && Object.hasOwn(span, 'trace_id')) throw snakeCase();
  return data as Decoded;
}

/** Python's bytes.fromhex skips ASCII whitespace between digit pairs. */
function hexBytes(id: string): Uint8Array {
  const hex = id.replace(/[ \t\n\r\v\f]/g, '');
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(hex)) throw badRequest('Invalid OpenTelemetry format: traceId must be hex');
  return Buffer.from(hex, 'hex');
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
