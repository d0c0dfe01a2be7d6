import protobuf from 'protobufjs/light.js';
import { randomHex } from './world.js';

/** Just enough of OTLP's ExportTraceServiceRequest to send a span the way OpenTelemetry exporters do. */
const schema = protobuf.Root.fromJSON({
  nested: {
    ExportTraceServiceRequest: { fields: { resourceSpans: { rule: 'repeated', type: 'ResourceSpans', id: 1 } } },
    ResourceSpans: { fields: { resource: { type: 'Resource', id: 1 }, scopeSpans: { rule: 'repeated', type: 'ScopeSpans', id: 2 } } },
    Resource: { fields: { attributes: { rule: 'repeated', type: 'KeyValue', id: 1 } } },
    ScopeSpans: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    Span: {
      fields: {
        traceId: { type: 'bytes', id: 1 },
        spanId: { type: 'bytes', id: 2 },
        name: { type: 'string', id: 5 },
        kind: { type: 'int32', id: 6 },
        startTimeUnixNano: { type: 'fixed64', id: 7 },
        endTimeUnixNano: { type: 'fixed64', id: 8 },
        attributes: { rule: 'repeated', type: 'KeyValue', id: 9 },
      },
    },
    KeyValue: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: { fields: { stringValue: { type: 'string', id: 1 } } },
  },
});
const ExportRequest = schema.lookupType('ExportTraceServiceRequest');

const keyValues = (attributes: Record<string, string>) => Object.entries(attributes).map(([key, value]) => ({ key, value: { stringValue: value } }));

export function otlpProtobuf(traceHex: string, spanName: string, attributes: Record<string, string> = {}, resource: Record<string, string> = {}): Uint8Array {
  const now = Date.now() * 1e6;
  return ExportRequest.encode(
    ExportRequest.fromObject({
      resourceSpans: [
        {
          resource: { attributes: keyValues(resource) },
          scopeSpans: [
            {
              spans: [
                {
                  traceId: Buffer.from(traceHex, 'hex'),
                  spanId: Buffer.from(randomHex(8), 'hex'),
                  name: spanName,
                  kind: 1,
                  startTimeUnixNano: now,
                  endTimeUnixNano: now + 1e6,
                  attributes: keyValues(attributes),
                },
              ],
            },
          ],
        },
      ],
    }),
  ).finish();
}
