import type { IncomingMessage, ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMetricsServer } from '../../src/metrics/server.js';
import { listenPublic, type PublicServer } from '../../src/start/public-server.js';
import { removeDir, startStubUpstream, startTestFlowgate } from '../helpers/flowgate.js';

/**
 * The public listener has no limit on a whole request (uploads), and with `requestTimeout: 0` Node made
 * the headers' limit 0 too: a client sending nothing, or half a header, held its connection forever.
 */
describe('every listener has a header timeout', () => {
  it('the public listener of a running flowgate, and the metrics listener', async () => {
    const upstream = await startStubUpstream();
    const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
    const metrics = await startMetricsServer(new Registry(), '127.0.0.1', 0);
    try {
      expect(fg.server.headersTimeout).toBe(60_000);
      expect(fg.server.requestTimeout).toBe(0);
      expect(metrics.server.headersTimeout).toBe(60_000);
    } finally {
      await metrics.close();
      await fg.close();
      await upstream.close();
      removeDir(fg.dir);
    }
  });
});

describe('the public listener, with a short header timeout', () => {
  let pub: PublicServer;
  let port: number;
  beforeAll(async () => {
    // Reads the whole body, then says how much came.
    const listener = (req: IncomingMessage, res: ServerResponse) => {
      let n = 0;
      req.on('data', (chunk: Buffer) => (n += chunk.length));
      req.on('end', () => res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`got ${n}`));
    };
    pub = await listenPublic(listener, 0, '127.0.0.1', { headersTimeoutMs: 400, connectionsCheckingIntervalMs: 50 });
    port = Number(new URL(pub.url).port);
  });
  afterAll(async () => {
    pub.server.closeAllConnections();
    await pub.close();
  });

  /** Writes `parts` (a pause of `gapMs` before each), then reads until the server closes or 4 s pass. */
  async function talk(parts: string[], gapMs: number): Promise<{ closed: boolean; data: string }> {
    const socket = connect(port, '127.0.0.1');
    socket.setEncoding('latin1');
    socket.on('error', () => undefined);
    let data = '';
    socket.on('data', (chunk: string) => (data += chunk));
    const closed = new Promise<boolean>((resolve) => {
      const t = setTimeout(() => resolve(false), 4000);
      socket.once('close', () => {
        clearTimeout(t);
        resolve(true);
      });
    });
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    for (const part of parts) {
      await new Promise((r) => setTimeout(r, gapMs));
      if (!socket.writable) break;
      socket.write(part);
    }
    const result = { closed: await closed, data };
    socket.destroy();
    return result;
  }

  it('answers 408 and closes a connection whose headers do not finish in time', async () => {
    const { closed, data } = await talk(['GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a'], 0);
    expect(closed).toBe(true);
    expect(data).toMatch(/^HTTP\/1\.1 408 /);
    expect(data).toContain('"error_code":"REQUEST_TIMEOUT"');
  });

  it('closes a connection that sends nothing', async () => {
    expect((await talk([], 0)).closed).toBe(true);
  });

  it('lets an upload whose body takes far longer than the header timeout finish', async () => {
    const chunk = 'x'.repeat(1000);
    const head = `POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: ${chunk.length * 8}\r\nConnection: close\r\n\r\n`;
    const { closed, data } = await talk([head, ...Array<string>(8).fill(chunk)], 200);
    expect(closed).toBe(true);
    expect(data).toMatch(/^HTTP\/1\.1 200 /);
    expect(data).toContain(`got ${chunk.length * 8}`);
  });
});
