import http from 'node:http';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseInferenceConfig } from '../../src/inference/config.js';
import { createInferenceGateway, type InferenceGateway } from '../../src/inference/gateway.js';
import { parseKeyList } from '../../src/inference/key-file.js';
import { staticKeyStore } from '../../src/inference/keys.js';
import { createLogger } from '../../src/logging.js';
import { closeServer, fakeModelServer, listen, type FakeModelServer } from '../helpers/model-server.js';

const KEY = 'stream-key-0123456789abcdef';

/** Resolves when `signal` is called; rejects after `ms` so a buffering proxy fails instead of hanging. */
function deferred(label: string, ms = 5000) {
  let resolve!: () => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    setTimeout(() => rej(new Error(`timed out waiting for: ${label}`)), ms).unref();
  });
  return { promise, signal: () => resolve() };
}

describe('inference streaming', () => {
  let upstream: FakeModelServer;
  let gateway: InferenceGateway;
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    upstream = await fakeModelServer();
    const config = parseInferenceConfig(`routes:\n  - { name: llm, upstream: "${upstream.url}", pathPrefix: /models/llm, stripPrefix: true }`);
    gateway = createInferenceGateway({
      config,
      keys: staticKeyStore(parseKeyList(KEY)),
      registry: new Registry(),
      logger: createLogger('silent'),
    });
    server = http.createServer((req, res) => {
      if (!gateway.handle(req, res)) res.writeHead(404).end();
    });
    port = Number(new URL(await listen(server)).port);
  });

  afterAll(async () => {
    await gateway.close();
    await closeServer(server);
    await upstream.close();
  });

  it('delivers server-sent events to the client while the model server is still generating', async () => {
    const clientSawFirst = deferred('the first event at the client');
    let upstreamEnded = false;
    upstream.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      res.write('data: {"token":"Hel"}\n\n');
      // The second event is only written once the client has the first: a proxy that buffers
      // until the end would never let this happen.
      void clientSawFirst.promise.then(() => {
        res.write('data: {"token":"lo"}\n\n');
        upstreamEnded = true;
        res.end('data: [DONE]\n\n');
      }, () => res.destroy());
    };

    const chunks: Array<{ text: string; upstreamEnded: boolean }> = [];
    const done = new Promise<void>((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', path: '/models/llm/v2/models/llm/generate_stream', method: 'POST', headers: { 'x-api-key': KEY } }, (res) => {
        expect(res.headers['content-type']).toBe('text/event-stream');
        res.setEncoding('utf8');
        res.on('data', (text: string) => {
          chunks.push({ text, upstreamEnded });
          if (chunks.length === 1) clientSawFirst.signal();
        });
        res.on('end', resolve);
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end('{"text_input":"Hi"}');
    });
    await done;
    expect(chunks[0]).toEqual({ text: 'data: {"token":"Hel"}\n\n', upstreamEnded: false });
    expect(chunks.map((c) => c.text).join('')).toBe('data: {"token":"Hel"}\n\ndata: {"token":"lo"}\n\ndata: [DONE]\n\n');
  });

  it('streams a chunked request body to the model server before the client has finished sending', async () => {
    const upstreamSawFirst = deferred('the first request bytes at the model server');
    let received = 0;
    upstream.handler = (req, res) => {
      req.on('data', (c: Buffer) => {
        received += c.length;
        upstreamSawFirst.signal();
      });
      req.on('end', () => res.end(JSON.stringify({ received })));
    };

    const answer = new Promise<string>((resolve, reject) => {
      const req = http.request(
        { port, host: '127.0.0.1', path: '/models/llm/v2/models/llm/infer', method: 'POST', headers: { 'x-api-key': KEY, 'Content-Type': 'application/octet-stream' } },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve(body));
        },
      );
      req.on('error', reject);
      const piece = Buffer.alloc(1 << 20, 7); // 1 MiB of tensor
      req.write(piece);
      // The rest is only sent once the model server has the first megabyte.
      void upstreamSawFirst.promise.then(() => {
        for (let i = 0; i < 15; i++) req.write(piece);
        req.end();
      }, reject);
    });
    expect(JSON.parse(await answer)).toEqual({ received: 16 << 20 });
    expect(upstream.requests.at(-1)!.headers['transfer-encoding']).toBe('chunked');
  });

  it('stops the upstream request when the client goes away mid-stream', async () => {
    const upstreamClosed = deferred('the upstream connection to close');
    upstream.handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('data: first\n\n');
      res.on('close', () => upstreamClosed.signal());
    };
    await new Promise<void>((resolve, reject) => {
      const req = http.request({ port, host: '127.0.0.1', path: '/models/llm/invocations', method: 'POST', headers: { 'x-api-key': KEY } }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.on('error', () => {});
      req.end('{}');
      setTimeout(() => reject(new Error('no first event')), 5000).unref();
    });
    await upstreamClosed.promise;
  });
});
