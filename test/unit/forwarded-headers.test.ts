import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createProxyServer } from 'http-proxy-3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwarderFor } from '../helpers/mlflow-connection.js';

/** flowgate writes X-Forwarded-* itself; MLflow must get what http-proxy-3's `xfwd` would have sent. */
describe('X-Forwarded-* on forwarded requests', () => {
  const seen: IncomingHttpHeaders[] = [];
  const servers: Server[] = [];
  let viaFlowgate = '';
  let viaXfwd = '';
  let upstreamUrl = '';
  const close: Array<() => void> = [];

  const listen = (server: Server) =>
    new Promise<string>((resolve) => {
      servers.push(server);
      server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
    });

  beforeAll(async () => {
    const upstream = await listen(
      createServer((req, res) => {
        seen.push(req.headers);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      }),
    );
    upstreamUrl = upstream;
    const forwarder = forwarderFor(upstream);
    close.push(() => void forwarder.close());
    viaFlowgate = await listen(
      createServer((req, res) => forwarder.forward(req, res, { encodedPath: '/api/2.0/mlflow/runs/get', search: '', username: 'alice', requestId: 'r1' })),
    );
    const reference = createProxyServer({ target: upstream, xfwd: true });
    close.push(() => reference.close());
    viaXfwd = await listen(createServer((req, res) => reference.web(req, res)));
  });

  afterAll(() => {
    for (const c of close) c();
    for (const s of servers) s.close();
  });

  const send = (base: string, headers: Record<string, string>) =>
    new Promise<IncomingHttpHeaders>((resolve, reject) => {
      const before = seen.length;
      const req = request(`${base}/api/2.0/mlflow/runs/get`, { headers, agent: false }, (res) => {
        res.resume();
        res.on('end', () => (seen.length > before ? resolve(seen[seen.length - 1]!) : reject(new Error('upstream saw nothing'))));
      });
      req.on('error', reject);
      req.end();
    });

  /** The X-Forwarded-* MLflow got, with the front server's own port (each server has its own) spelled PORT. */
  const forwardedOf = (h: IncomingHttpHeaders, base: string) => {
    const port = new URL(base).port;
    return Object.fromEntries(
      Object.entries(h)
        .filter(([name]) => name.startsWith('x-forwarded-') && name !== 'x-forwarded-user')
        .map(([name, value]) => [name, String(value).replaceAll(port, 'PORT')]),
    );
  };

  it.each([
    ['no forwarding headers from the client', {}],
    ['a client list to append to', { 'X-Forwarded-For': '203.0.113.7', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Port': '443' }],
    ['a forwarded host', { 'X-Forwarded-Host': 'mlflow.example.com' }],
    ['a Host with a port', { Host: 'mlflow.internal:8443' }],
    ['a Host without a port', { Host: 'mlflow.internal' }],
  ])('with %s, the same as http-proxy-3 xfwd', async (_, headers: Record<string, string>) => {
    const mine = forwardedOf(await send(viaFlowgate, headers), viaFlowgate);
    const theirs = forwardedOf(await send(viaXfwd, headers), viaXfwd);
    expect(mine).toEqual(theirs);
    expect(mine['x-forwarded-for']).toMatch(/(^|,)127\.0\.0\.1$/);
    expect(mine['x-forwarded-proto']).toMatch(/(^|,)http$/);
    expect(mine['x-forwarded-host']).toBeTruthy();
  });

  it("sends MLflow the upstream's own Host and the client's in X-Forwarded-Host", async () => {
    const got = await send(viaFlowgate, { Host: 'ml.example.com' });
    expect(got.host).toBe(new URL(upstreamUrl).host);
    expect(got['x-forwarded-host']).toBe('ml.example.com');
    expect(got['x-forwarded-proto']).toBe('http');
    // An outer proxy's forwarded host is kept, as http-proxy-3 keeps it.
    const behindIngress = await send(viaFlowgate, { Host: 'mlflow.mlflow.svc', 'X-Forwarded-Host': 'ml.example.com' });
    expect(behindIngress['x-forwarded-host']).toBe('ml.example.com');
    expect(behindIngress.host).toBe(got.host);
  });

  it.each([
    ['the host called, over https (TLS ended before flowgate)', 'https://ml.example.com', 'ml.example.com', undefined],
    ['the host called, with its port', 'http://ml.example.com:8080', 'ml.example.com:8080', undefined],
    ['another host', 'https://evil.example', 'ml.example.com', 'https://evil.example'],
    ['a host ending like the one called', 'https://xml.example.com', 'ml.example.com', 'https://xml.example.com'],
    ['the same host on another port', 'http://ml.example.com:9999', 'ml.example.com:8080', 'http://ml.example.com:9999'],
    ['an opaque origin', 'null', 'ml.example.com', 'null'],
  ])('with an Origin naming %s (%s), MLflow gets the Origin only when cross-origin', async (_, origin, host, expected) => {
    const got = await send(viaFlowgate, { Host: host, Origin: origin });
    expect(got.origin).toBe(expected);
  });

  it('appends to the list a client sent rather than replacing it', async () => {
    const got = await send(viaFlowgate, { 'X-Forwarded-For': '203.0.113.7' });
    expect(got['x-forwarded-for']).toBe('203.0.113.7,127.0.0.1');
  });
});
