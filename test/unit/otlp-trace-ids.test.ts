import { deflateSync, gzipSync } from 'node:zlib';
import protobuf from 'protobufjs/light.js';
import { describe, expect, it } from 'vitest';
import { otlpTraceIds, readOtlpExport } from '../../src/authz/otlp-trace-ids.js';

// The real OTLP field numbers, plus fields flowgate does not read, so skipping them is exercised.
const root = protobuf.Root.fromJSON({
  nested: {
    Req: { fields: { resourceSpans: { rule: 'repeated', type: 'RS', id: 1 } } },
    RS: { fields: { resource: { type: 'Res', id: 1 }, scopeSpans: { rule: 'repeated', type: 'SS', id: 2 }, schemaUrl: { type: 'string', id: 3 } } },
    Res: { fields: { attributes: { rule: 'repeated', type: 'KV', id: 1 }, droppedAttributesCount: { type: 'uint32', id: 2 } } },
    KV: { fields: { key: { type: 'string', id: 1 }, value: { type: 'AnyValue', id: 2 } } },
    AnyValue: { fields: { stringValue: { type: 'string', id: 1 } } },
    SS: { fields: { spans: { rule: 'repeated', type: 'Span', id: 2 } } },
    Span: { fields: { traceId: { type: 'bytes', id: 1 }, spanId: { type: 'bytes', id: 2 }, name: { type: 'string', id: 5 }, attributes: { rule: 'repeated', type: 'KV', id: 9 } } },
  },
});
const Req = root.lookupType('Req');
const hexA = '0123456789abcdef0123456789abcdef';
const hexB = 'fedcba9876543210fedcba9876543210';
const span = (hex: string) => ({ traceId: Buffer.from(hex, 'hex'), spanId: Buffer.from('0102030405060708', 'hex'), name: 'x' });
const protobufBody = (...traces: string[]) =>
  Buffer.from(Req.encode(Req.fromObject({ resourceSpans: [{ resource: { droppedAttributesCount: 1 }, schemaUrl: 's', scopeSpans: [{ spans: traces.map(span) }] }] })).finish());
const jsonBody = (value: unknown) => Buffer.from(JSON.stringify(value));
const MAX = 1024 * 1024;

describe('otlpTraceIds (the traces an OTLP export writes into)', () => {
  it('reads every span trace id of a protobuf export as MLflow names it', () => {
    expect(otlpTraceIds(protobufBody(hexA, hexB, hexA), 'application/x-protobuf', undefined, MAX)).toEqual([`tr-${hexA}`, `tr-${hexB}`]);
  });

  it('reads gzip and deflate bodies as MLflow decompresses them', () => {
    const body = protobufBody(hexA);
    expect(otlpTraceIds(gzipSync(body), 'application/x-protobuf', 'gzip', MAX)).toEqual([`tr-${hexA}`]);
    expect(otlpTraceIds(deflateSync(body), 'application/x-protobuf', 'deflate', MAX)).toEqual([`tr-${hexA}`]);
  });

  it('names a 17-byte id with a leading zero byte as the 16-byte id MLflow turns it into', () => {
    const padded = Buffer.from(Req.encode(Req.fromObject({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: Buffer.from(`00${hexA}`, 'hex') }] }] }] })).finish());
    expect(otlpTraceIds(padded, 'application/x-protobuf', undefined, MAX)).toEqual([`tr-${hexA}`]);
  });

  it('reads OTLP JSON hex ids, with the whitespace Python skips', () => {
    const body = jsonBody({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: hexA.toUpperCase() }, { traceId: `${hexB.slice(0, 2)} ${hexB.slice(2)}` }] }] }] });
    expect(otlpTraceIds(body, 'application/json; charset=utf-8', undefined, MAX)).toEqual([`tr-${hexA}`, `tr-${hexB}`]);
  });

  it.each([
    ['snake_case keys MLflow would read as base64', 'application/json', jsonBody({ resource_spans: [{ scope_spans: [{ spans: [{ trace_id: 'AAAA' }] }] }] })],
    ['a snake_case trace_id', 'application/json', jsonBody({ resourceSpans: [{ scopeSpans: [{ spans: [{ trace_id: 'AAAA' }] }] }] })],
    ['a traceId that is not hex', 'application/json', jsonBody({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: 'zz' }] }] }] })],
    ['another content type', 'text/plain', protobufBody(hexA)],
    ['a broken protobuf body', 'application/x-protobuf', Buffer.from([0x0a, 0xff, 0xff, 0xff])],
  ])('refuses %s', (_, type, body) => {
    expect(() => otlpTraceIds(body, type, undefined, MAX)).toThrow(expect.objectContaining({ status: 400 }));
  });

  it('names the trace tags an export sets: root-span mlflow.traceTag.* and resource attributes, in both encodings', () => {
    const attr = (key: string) => ({ key, value: { stringValue: 'mlflow-artifacts:/2/traces/x/artifacts' } });
    const proto = Buffer.from(
      Req.encode(
        Req.fromObject({
          resourceSpans: [
            { resource: { attributes: [attr('service.name')] }, scopeSpans: [{ spans: [{ ...span(hexA), attributes: [attr('mlflow.traceTag.mlflow.artifactLocation'), attr('http.method')] }] }] },
          ],
        }),
      ).finish(),
    );
    expect(readOtlpExport(proto, 'application/x-protobuf', undefined, MAX).tagKeys).toEqual(['service.name', 'mlflow.artifactLocation']);
    const json = jsonBody({
      resourceSpans: [{ resource: { attributes: [attr('team')] }, scopeSpans: [{ spans: [{ traceId: hexA, attributes: [attr('mlflow.traceTag.mlflow.trace.spansLocation')] }] }] }],
    });
    expect(readOtlpExport(json, 'application/json', undefined, MAX).tagKeys).toEqual(['team', 'mlflow.trace.spansLocation']);
  });

  it('refuses an unknown encoding and a body that inflates past the limit', () => {
    expect(() => otlpTraceIds(protobufBody(hexA), 'application/x-protobuf', 'br', MAX)).toThrow(expect.objectContaining({ status: 400 }));
    expect(() => otlpTraceIds(gzipSync(Buffer.alloc(MAX * 2)), 'application/x-protobuf', 'gzip', MAX)).toThrow(expect.objectContaining({ status: 400 }));
  });
});
