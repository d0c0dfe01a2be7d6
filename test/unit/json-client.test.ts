import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { upstreamJsonFor } from '../helpers/mlflow-connection.js';

describe('upstream JSON client (filtered searches)', () => {
  let server: Server;
  let base: string;
  const sockets = new Set<unknown>();
  const seen: Array<{ method: string; url: string; body: string; type: string | undefined }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method!, url: req.url!, body, type: req.headers['content-type'] });
        if (req.url!.startsWith('/prefix/slow')) return void setTimeout(() => res.end('{}'), 2500);
        if (req.url!.startsWith('/prefix/html-missing')) return void res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>Not Found</h1>');
        if (req.url!.startsWith('/prefix/html')) return void res.end('<html>oops</html>');
        res.writeHead(req.url!.startsWith('/prefix/missing') ? 404 : 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ echo: req.url, body: body ? JSON.parse(body) : null }));
      });
    });
    server.on('connection', (s) => sockets.add(s));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends GET input as a repeated query and POST input as JSON, under the static prefix', async () => {
    const client = upstreamJsonFor(base, '/prefix', 2000);
    const get = await client.call('GET', '/api/2.0/mlflow/registered-models/search', { filter: "name='a b'", ids: ['1', '2'], skip: undefined });
    expect(get).toMatchObject({ status: 200, json: { echo: '/prefix/api/2.0/mlflow/registered-models/search?filter=name%3D%27a+b%27&ids=1&ids=2', body: null } });
    // The bytes as MLflow sent them, for an answer passed on unchanged.
    expect(JSON.parse(get.raw!.toString('utf8'))).toEqual(get.json);
    const post = await client.call('POST', '/api/2.0/mlflow/experiments/search', { max_results: 3 });
    expect(post.json).toEqual({ echo: '/prefix/api/2.0/mlflow/experiments/search', body: { max_results: 3 } });
    expect(seen.at(-1)!.type).toBe('application/json');
    const missing = await client.call('GET', '/missing', {});
    expect(missing.status).toBe(404);
    await client.close();
  });

  it('reuses keep-alive connections for consecutive calls', async () => {
    const before = sockets.size;
    const client = upstreamJsonFor(base, '/prefix', 2000);
    for (let i = 0; i < 10; i++) await client.call('POST', '/x', { i });
    // undici's pool takes a connection back a microtask after its answer, and a call made in the
    // answer's own continuation opens a second one; from then on the two are reused.
    expect(sockets.size - before).toBeLessThanOrEqual(2);
    await client.close();
  });

  it('maps failures to MLflow-shaped errors: not JSON 502, too slow 504, unreachable 503', async () => {
    const client = upstreamJsonFor(base, '/prefix', 200);
    // The status stays on the error: look-ups tell Flask's HTML 404 (no such route) from a broken answer.
    await expect(client.call('GET', '/html', {})).rejects.toMatchObject({ code: 'BAD_GATEWAY', status: 502, upstreamStatus: 200 });
    await expect(client.call('GET', '/html-missing', {})).rejects.toMatchObject({ code: 'BAD_GATEWAY', upstreamStatus: 404 });
    await expect(client.call('GET', '/slow', {})).rejects.toMatchObject({ code: 'GATEWAY_TIMEOUT' });
    await client.close();
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const nowhere = upstreamJsonFor(`http://127.0.0.1:${port}`, '', 2000);
    await expect(nowhere.call('GET', '/x', {})).rejects.toMatchObject({ code: 'TEMPORARILY_UNAVAILABLE' });
    await nowhere.close();
  });
});
