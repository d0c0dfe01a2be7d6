import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import { createServer as createNetServer, connect as connectNet, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwarderFor } from '../helpers/mlflow-connection.js';
import { closeServer, listen } from '../helpers/model-server.js';

/** What crosses flowgate's hop to MLflow and back: the message, not the connection's own headers. */
describe('forwarding over the pool to MLflow', () => {
  const servers: Server[] = [];
  const seen: IncomingHttpHeaders[] = [];
  const seenBodies: string[] = [];
  let streamClosed: Promise<void> = Promise.resolve();
  let front = '';
  let forwarder: ReturnType<typeof forwarderFor>;

  beforeAll(async () => {
    const upstreamServer = createServer((req, res) => {
      seen.push(req.headers);
      if (req.url === '/endless') {
        // An artifact far larger than anyone reads: sent in pieces until the connection goes.
        streamClosed = new Promise((resolve) => res.on('close', () => resolve()));
        res.writeHead(200, { 'Content-Type': 'application/octet-stream' });
        const piece = Buffer.alloc(64 * 1024, 'a');
        const timer = setInterval(() => res.write(piece), 5);
        res.on('close', () => clearInterval(timer));
        return;
      }
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seenBodies.push(body);
        res.writeHead(201, 'Made It', [
          'Content-Type', 'application/json',
          'Content-Length', '2',
          'Set-Cookie', 'a=1; Path=/',
          'Set-Cookie', 'b=2; Path=/',
          'Connection', 'keep-alive',
          'Keep-Alive', 'timeout=30',
        ]);
        res.end('{}');
      });
    });
    const frontServer = createServer((req, res) =>
      forwarder.forward(req, res, { encodedPath: req.url!, search: '', username: 'alice', requestId: 'r1' }),
    );
    servers.push(upstreamServer, frontServer);
    forwarder = forwarderFor(await listen(upstreamServer));
    front = await listen(frontServer);
  });

  afterAll(async () => {
    await forwarder.close();
    await Promise.all(servers.map(closeServer));
  });

  const send = (path: string, headers: Record<string, string>, body?: string) =>
    new Promise<IncomingMessage & { text: string; raw: string[] }>((resolve, reject) => {
      const req = request(`${front}${path}`, { method: body === undefined ? 'GET' : 'POST', headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('latin1');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve(Object.assign(res, { text, raw: res.rawHeaders })));
      });
      req.on('error', reject);
      req.end(body);
    });

  it("drops the client's hop-by-hop headers and still sends the body (Expect answered by flowgate's server)", async () => {
    const res = await send(
      '/api/2.0/mlflow/runs/log-metric',
      { Expect: '100-continue', 'Keep-Alive': '5', Upgrade: 'h2c', 'Proxy-Connection': 'keep-alive', 'Transfer-Encoding': 'chunked', 'X-MLflow-Guardrail-Bypass': '1', 'X-Kept': 'yes' },
      '{"run_id":"r"}',
    );
    expect(res.statusCode).toBe(201);
    const got = seen.at(-1)!;
    for (const name of ['expect', 'keep-alive', 'upgrade', 'proxy-connection', 'authorization', 'x-mlflow-guardrail-bypass']) expect(got[name]).toBeUndefined();
    expect(got['x-kept']).toBe('yes');
    expect(got['x-forwarded-user']).toBe('alice');
    expect(seenBodies.at(-1)).toBe('{"run_id":"r"}');
  });

  it('drops the headers the client names in Connection, but never one that carries what was decided (type, coding, workspace)', async () => {
    const res = await send(
      '/api/2.0/mlflow/runs/log-metric',
      {
        Connection: 'keep-alive, X-Hop-Only, Content-Type, X-MLflow-Workspace, X-MLflow-Experiment-Id, X-MLflow-Run-Id',
        'X-Hop-Only': 'for-flowgate',
        'Content-Type': 'application/json',
        'X-MLflow-Workspace': 'team-a',
        'X-MLflow-Experiment-Id': '7',
        'X-MLflow-Run-Id': 'r-1',
        'X-Kept': 'yes',
      },
      '{"run_id":"r"}',
    );
    expect(res.statusCode).toBe(201);
    const got = seen.at(-1)!;
    expect(got['x-hop-only']).toBeUndefined();
    expect([got['content-type'], got['x-mlflow-workspace'], got['x-mlflow-experiment-id'], got['x-mlflow-run-id'], got['x-kept']]).toEqual(['application/json', 'team-a', '7', 'r-1', 'yes']);
    expect(seenBodies.at(-1)).toBe('{"run_id":"r"}');
  });

  it("relays MLflow's status line, every Set-Cookie, but not its hop-by-hop headers", async () => {
    const res = await send('/api/2.0/mlflow/experiments/get', {});
    expect(res.statusCode).toBe(201);
    expect(res.statusMessage).toBe('Made It');
    expect(res.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    // Node's own framing towards the client; MLflow's Keep-Alive hint was for flowgate's connection.
    expect(res.raw.filter((_, i) => i % 2 === 0 && res.raw[i]!.toLowerCase() === 'keep-alive')).toEqual([]);
  });

  it('answers HEAD with the headers only, and the pooled connection stays in step for the next call', async () => {
    const head = await new Promise<IncomingMessage & { text: string }>((resolve, reject) => {
      const req = request(`${front}/api/2.0/mlflow/experiments/get`, { method: 'HEAD', agent: false }, (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve(Object.assign(res, { text })));
      });
      req.on('error', reject);
      req.end();
    });
    expect(head.statusCode).toBe(201);
    expect(head.headers['content-length']).toBe('2');
    expect(head.text).toBe('');
    const next = await send('/api/2.0/mlflow/experiments/get', {});
    expect([next.statusCode, next.text]).toEqual([201, '{}']);
  });

  /** Asks for the endless answer, lets `leave` decide when to go, and tells whether MLflow's side closed soon after. */
  const leaveMidAnswer = async (leave: (res: IncomingMessage, go: () => void) => void) => {
    await new Promise<void>((resolve, reject) => {
      const req = request(`${front}/endless`, { agent: false }, (res) => leave(res, () => (req.destroy(), resolve())));
      req.on('error', () => undefined);
      req.end();
      setTimeout(() => reject(new Error('no answer')), 5_000);
    });
    return Promise.race([streamClosed.then(() => 'closed'), new Promise((r) => setTimeout(() => r('still open'), 3_000))]);
  };

  it('stops reading from MLflow when the client goes away mid-answer', async () => {
    // Without the stop, MLflow would keep sending until the body timeout.
    expect(await leaveMidAnswer((res, go) => res.once('data', go))).toBe('closed');
  });

  it('stops reading from MLflow when a client that stopped reading goes away (no drain ever comes)', async () => {
    // The client reads nothing: flowgate's writes back up and it pauses MLflow, waiting for a drain.
    expect(await leaveMidAnswer((res, go) => (res.pause(), setTimeout(go, 500)))).toBe('closed');
  });

  it("passes MLflow's header bytes on unchanged, a UTF-8 file name after the length included (GET and HEAD)", async () => {
    // A raw answer: Node's own server would re-encode this very header on the way out.
    const disposition = Buffer.from('attachment; filename="m\u00fcller-\u6a21\u578b.txt"', 'utf8');
    const raw = createNetServer((socket) =>
      socket.once('data', () =>
        socket.end(
          Buffer.concat([
            Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Disposition: ', 'latin1'),
            disposition,
            Buffer.from('\r\nConnection: close\r\n\r\n{}', 'latin1'),
          ]),
        ),
      ),
    );
    await new Promise<void>((r) => raw.listen(0, '127.0.0.1', r));
    const viaRaw = forwarderFor(`http://127.0.0.1:${(raw.address() as AddressInfo).port}`);
    const rawFront = createServer((req, res) => viaRaw.forward(req, res, { encodedPath: '/x', search: '', username: undefined, requestId: 'r2' }));
    try {
      const base = await listen(rawFront);
      for (const method of ['GET', 'HEAD']) {
        const bytes = await new Promise<Buffer>((resolve, reject) => {
          const c = connectNet(Number(new URL(base).port), '127.0.0.1', () => c.write(`${method} /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
          const chunks: Buffer[] = [];
          c.on('data', (d: Buffer) => chunks.push(d));
          c.on('end', () => resolve(Buffer.concat(chunks)));
          c.on('error', reject);
        });
        expect(bytes.subarray(0, 15).toString('latin1'), method).toBe('HTTP/1.1 200 OK');
        expect(bytes.includes(Buffer.concat([Buffer.from('Content-Disposition: '), disposition, Buffer.from('\r\n')])), method).toBe(true);
      }
    } finally {
      await viaRaw.close();
      await closeServer(rawFront);
      raw.close();
    }
  });
});
