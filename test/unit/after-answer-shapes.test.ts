import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { onceAnswered, relayAfter } from '../../src/proxy/after/relay.js';
import type { ResponseHandler } from '../../src/proxy/forward.js';
import { forwarderFor } from '../helpers/mlflow-connection.js';

/*
 * Class 11: an after-hook works on every answer shape MLflow sends (an OTLP export's empty protobuf
 * body, protobuf, JSON, compressed, large), and one that cannot do its work says so (counted by the
 * caller as flowgate_after_hook_failures_total) instead of passing silently.
 */
async function through(answer: { status: number; body: Buffer; headers?: Record<string, string> }, handler: (failures: unknown[]) => ResponseHandler) {
  const upstream = createServer((_req, res) => {
    res.writeHead(answer.status, { 'content-type': 'application/x-protobuf', ...answer.headers });
    res.end(answer.body);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const failures: unknown[] = [];
  const forwarder = forwarderFor(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
  const front = createServer((req, res) =>
    forwarder.forward(req, res, { encodedPath: '/', search: '', username: undefined, requestId: 'r1', onResponse: handler(failures) }),
  );
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  const res = await fetch(`http://127.0.0.1:${(front.address() as AddressInfo).port}/`, { headers: { 'accept-encoding': 'identity' } });
  const body = Buffer.from(await res.arrayBuffer());
  front.close();
  await forwarder.close();
  upstream.close();
  return { status: res.status, body, failures };
}

describe('onceAnswered (hooks that record a change, whatever MLflow answers)', () => {
  it.each([
    ['an empty protobuf body (OTLP export)', 200, Buffer.alloc(0)],
    ['a protobuf body', 200, Buffer.from([0x0a, 0x02, 0x08, 0x01])],
    ['a gzipped body', 200, gzipSync('{"ok":true}')],
    ['a large body', 200, Buffer.alloc(6 * 1024 * 1024, 'a')],
    ['an error answer (the write may have landed)', 500, Buffer.from('{"error_code":"INTERNAL_ERROR"}')],
  ])('runs on %s and relays it unchanged', async (_what, status, body) => {
    const seen: number[] = [];
    const r = await through({ status, body }, (failures) => onceAnswered((s) => void seen.push(s), (e) => failures.push(e)));
    expect(seen).toEqual([status]);
    expect(r.failures).toEqual([]);
    expect(r.status).toBe(status);
    expect(r.body.equals(body)).toBe(true);
  });
});

describe('relayAfter (hooks that read the JSON answer)', () => {
  it('reads a gzipped JSON answer and relays the bytes MLflow sent', async () => {
    const seen: unknown[] = [];
    const body = gzipSync('{"experiment_id":"7"}');
    const r = await through({ status: 200, body, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } }, (failures) =>
      relayAfter((json) => void seen.push(json), (e) => failures.push(e)),
    );
    expect(seen).toEqual([{ experiment_id: '7' }]);
    expect(r.failures).toEqual([]);
    // Relayed still compressed (fetch inflates it here).
    expect(r.body.toString()).toBe('{"experiment_id":"7"}');
  });

  it('reports a successful answer too large to inspect as a failure, and still relays it whole', async () => {
    const body = Buffer.alloc(300_000, 'a');
    const r = await through({ status: 200, body }, (failures) => relayAfter(() => undefined, (e) => failures.push(e), 64 * 1024));
    expect(r.failures).toHaveLength(1);
    expect(r.body.equals(body)).toBe(true);
  });
});
