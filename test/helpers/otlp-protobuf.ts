import protobuf from 'protobufjs/light.js';

/*
 * OTLP/HTTP's protobuf encoding of a trace export, read into the shape OTLP/JSON gives it (ids as hex,
 * 64-bit integers as strings), so a receiver handles both alike. The Python SDK's exporter sends only
 * protobuf over HTTP. The message and field numbers are opentelemetry-proto's
 * (opentelemetry/proto/collector/trace/v1, trace/v1, common/v1), with the fields the tests read.
 */
const ANY_VALUE = {
  oneofs: { value: { oneof: ['stringValue', 'boolValue', 'intValue', 'doubleValue', 'arrayValue', 'kvlistValue', 'bytesValue'] } },
  fields: {
    stringValue: { type: 'string', id: 1 },
    boolValue: { type: 'bool', id: 2 },
    intValue: { type: 'int64', id: 3 },
    doubleValue: { type: 'double', id: 4 },
    arrayValue: { type: 'ArrayValue', id: 5 },
    kvlistValue: { type: 'KeyValueList', id: 6 },
    bytesValue: { type: 'bytes', id: 7 },
  },
};
/** The messages of an OTLP trace export (what the tests read and the attack harness writes). */
export const otlpTraceRoot = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 },
        spanId: { type: 'bytes', id: 2 },
        parentSpanId: { type: 'bytes', id: 4 },
        name: { type: 'string', id: 5 },
        kind: { type: 'int32', id: 6 },
        startTimeUnixNano: { type: 'fixed64', id: 7 },
        endTimeUnixNano: { type: 'fixed64', id: 8 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
        status: { type: 'Status', id: 15 },
      },
    },
    Status: { fields: { message: { type: 'string', id: 2 }, code: { type: 'int32', id: 3 } } },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: ANY_VALUE,
    ArrayValue: { fields: { values: { rule: 'repeated', type: 'AnyValue', id: 1 } } },
    KeyValueList: { fields: { values: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
  },
});
const ExportTraceServiceRequest = otlpTraceRoot.lookupType('ExportTraceServiceRequest');

/** A protobuf trace export as OTLP/JSON would have written it: ids as hex, 64-bit integers as decimal strings. */
export function traceExportFromProtobuf(body: Uint8Array): Record<string, unknown[]> {
  const decoded = ExportTraceServiceRequest.toObject(ExportTraceServiceRequest.decode(body), { bytes: Array, longs: String, arrays: true }) as Record<string, unknown[]>;
  const hex = (v: unknown) => (Array.isArray(v) ? Buffer.from(v as number[]).toString('hex') : '');
  for (const rs of (decoded.resourceSpans ?? []) as { scopeSpans?: { spans?: Record<string, unknown>[] }[] }[])
    for (const ss of rs.scopeSpans ?? [])
      for (const span of ss.spans ?? []) for (const id of ['traceId', 'spanId', 'parentSpanId']) span[id] = hex(span[id]);
  return decoded;
}
