import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { relayAfter } from '../../src/proxy/after/relay.js';
import { forwarderFor } from '../helpers/mlflow-connection.js';

/** A client → relay → upstream chain on loopback; returns what the client received and what the hook saw. */
async function through(upstreamBody: Buffer, status: number, limit: number) {
  const upstream = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', 'x-upstream': 'yes' });
    res.end(upstreamBody);
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  const seen: unknown[] = [];
  const forwarder = forwarderFor(`http://127.0.0.1:${(upstream.address() as AddressInfo).port}`);
  const front = createServer((req, res) =>
    forwarder.forward(req, res, {
      encodedPath: '/',
      search: '',
      username: undefined,
      requestId: 'r1',
      onResponse: relayAfter((json) => void seen.push(json), () => undefined, limit),
    }),
  );
  await new Promise<void>((r) => front.listen(0, '127.0.0.1', r));
  const res = await fetch(`http://127.0.0.1:${(front.address() as AddressInfo).port}/`);
  const body = Buffer.from(await res.arrayBuffer());
  front.close();
  await forwarder.close();
  upstream.close();
  return { status: res.status, header: res.headers.get('x-upstream'), body, seen };
}

describe('relayAfter', () => {
  it('lets the hook read a small successful answer and relays it unchanged', async () => {
    const r = await through(Buffer.from('{"experiment_id":"7"}'), 200, 1024);
    expect(r).toMatchObject({ status: 200, header: 'yes', seen: [{ experiment_id: '7' }] });
    expect(r.body.toString()).toBe('{"experiment_id":"7"}');
  });

  it('skips the hook on an error answer but relays it', async () => {
    const r = await through(Buffer.from('{"error_code":"X"}'), 400, 1024);
    expect(r).toMatchObject({ status: 400, seen: [] });
    expect(r.body.toString()).toBe('{"error_code":"X"}');
  });

  it('streams an answer past the limit whole, without the hook', async () => {
    const big = Buffer.alloc(300_000, 'a');
    const r = await through(big, 200, 64 * 1024);
    expect(r.seen).toEqual([]);
    expect(r.body.length).toBe(big.length);
    expect(r.body.equals(big)).toBe(true);
  });
});
