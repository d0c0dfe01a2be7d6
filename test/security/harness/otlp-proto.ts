import { otlpTraceRoot } from '../../helpers/otlp-protobuf.js';
import { randomHex } from './world.js';

/** OTLP's ExportTraceServiceRequest, to send a span the way OpenTelemetry exporters do. */
const ExportRequest = otlpTraceRoot.lookupType('ExportTraceServiceRequest');

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
