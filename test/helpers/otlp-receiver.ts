import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { traceExportFromProtobuf } from './otlp-protobuf.js';

/** An OTLP attribute value as OTLP/JSON writes it. */
interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
  kvlistValue?: { values?: { key: string; value: OtlpValue }[] };
}

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | undefined;
  readonly name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Record<string, unknown>;
  readonly status: { code?: number; message?: string };
  readonly service: unknown;
}

export interface ReceivedLog {
  readonly eventName: string | undefined;
  readonly severityText: string | undefined;
  readonly body: unknown;
  readonly attributes: Record<string, unknown>;
  readonly traceId: string | undefined;
  readonly service: unknown;
}

/** OTLP/JSON's tagged value as a plain JavaScript value. */
function plain(value: OtlpValue | undefined): unknown {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(plain);
  if (value.kvlistValue !== undefined) return Object.fromEntries((value.kvlistValue.values ?? []).map((kv) => [kv.key, plain(kv.value)]));
  return undefined;
}

type OtlpAttributes = { key: string; value: OtlpValue }[];
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttributes;
  status?: { code?: number; message?: string };
}
interface OtlpLogRecord {
  eventName?: string;
  severityText?: string;
  body?: OtlpValue;
  attributes?: OtlpAttributes;
  traceId?: string;
}

const attributesOf = (list: OtlpAttributes | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, plain(kv.value)]));

/**
 * An OTLP/HTTP receiver on loopback, as a collector's `otlp` receiver listens: `/v1/traces` and
 * `/v1/logs`, JSON encoding (what flowgate's exporters send), and protobuf for traces. Every body is kept raw too, for tests
 * that search it for what must never be there.
 */
export async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const logs: ReceivedLog[] = [];
  const raw: string[] = [];
  const contentTypes: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      raw.push(text);
      contentTypes.push(String(req.headers['content-type']));
      // OTLP/JSON (flowgate's exporters), or protobuf (the Python SDK's, as MLflow under opentelemetry-instrument sends).
      const body =
        String(req.headers['content-type']).startsWith('application/x-protobuf') && req.url === '/v1/traces'
          ? traceExportFromProtobuf(Buffer.concat(chunks))
          : (JSON.parse(text) as Record<string, unknown[]>);
      if (req.url === '/v1/traces')
        for (const rs of (body.resourceSpans ?? []) as { resource?: { attributes?: [] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[]) {
          const service = attributesOf(rs.resource?.attributes)['service.name'];
          for (const ss of rs.scopeSpans ?? [])
            for (const s of ss.spans ?? [])
              spans.push({
                traceId: s.traceId,
                spanId: s.spanId,
                parentSpanId: s.parentSpanId || undefined,
                name: s.name,
                kind: s.kind,
                attributes: attributesOf(s.attributes),
                status: s.status ?? {},
                service,
              });
        }
      if (req.url === '/v1/logs')
        for (const rl of (body.resourceLogs ?? []) as { resource?: { attributes?: [] }; scopeLogs?: { logRecords?: OtlpLogRecord[] }[] }[]) {
          const service = attributesOf(rl.resource?.attributes)['service.name'];
          for (const sl of rl.scopeLogs ?? [])
            for (const r of sl.logRecords ?? [])
              logs.push({
                eventName: r.eventName,
                severityText: r.severityText,
                body: plain(r.body),
                attributes: attributesOf(r.attributes),
                traceId: r.traceId || undefined,
                service,
              });
        }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    logs,
    raw,
    contentTypes,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface PassedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

/** A pass-through in front of a real upstream that records the head of every request it passes on (what the upstream received). */
export async function startRecordingPassThrough(target: string) {
  const passed: PassedRequest[] = [];
  const to = new URL(target);
  const server = createServer((req, res) => {
    passed.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    const out = httpRequest({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: { ...req.headers, host: to.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    passed,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
