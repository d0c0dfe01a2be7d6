import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSilenceWatch, UpstreamSilentError, type Listening } from '../../src/upstream/silence-watch.js';
import { forwarderFor, upstreamJsonFor } from '../helpers/mlflow-connection.js';
import { closeServer, listen } from '../helpers/model-server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('the silence watch', () => {
  const call = (): Listening & { failure?: Error } => {
    const c: Listening & { failure?: Error } = { lastHeard: 0, watchPrev: undefined, watchNext: undefined, giveUp: (err) => (c.failure = err) };
    return c;
  };

  it('gives up on a call that hears nothing for the limit, and on no other', async () => {
    const watch = createSilenceWatch(60);
    const silent = call();
    const talking = call();
    const heldBack = Object.assign(call(), { heldBack: true });
    const finished = call();
    for (const c of [silent, talking, heldBack, finished]) watch.watch(c);
    watch.done(finished);
    watch.done(finished); // twice: a call ends once, but undici may report an abort after the end
    expect(watch.watching).toBe(3);
    const talk = setInterval(() => (talking.lastHeard = Date.now()), 10);
    await sleep(200);
    clearInterval(talk);
    expect(silent.failure).toBeInstanceOf(UpstreamSilentError);
    expect((silent.failure as NodeJS.ErrnoException).code).toBe('FLOWGATE_UPSTREAM_SILENT');
    expect(talking.failure).toBeUndefined();
    expect(heldBack.failure).toBeUndefined();
    expect(finished.failure).toBeUndefined();
    expect(watch.watching).toBe(2);
    watch.close();
    expect(watch.watching).toBe(0);
  });
});

/** MLflow that stops talking: before its headers, or halfway through an answer. */
describe('calls to an MLflow that goes quiet', () => {
  const servers: Server[] = [];
  let upstream = '';
  let front = '';
  let forwarder: ReturnType<typeof forwarderFor>;
  const BIG = 8 * 1024 * 1024;

  beforeAll(async () => {
    const upstreamServer = createServer((req, res) => {
      req.resume();
      if (req.url === '/mute') return; // never answers
      if (req.url === '/stalls') {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': '2048' });
        res.write(Buffer.alloc(1024, 'a')); // and never the rest
        return;
      }
      if (req.url === '/big') {
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': String(BIG) });
        return res.end(Buffer.alloc(BIG, 'b'));
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
    const frontServer = createServer((req, res) => forwarder.forward(req, res, { encodedPath: req.url!, search: '', username: 'alice', requestId: 'r1' }));
    servers.push(upstreamServer, frontServer);
    upstream = await listen(upstreamServer);
    forwarder = forwarderFor(upstream, '', 300);
    front = await listen(frontServer);
  });

  afterAll(async () => {
    await forwarder.close();
    await Promise.all(servers.map(closeServer));
  });

  const get = (path: string, onResponse?: (res: IncomingMessage) => Promise<void>) =>
    new Promise<{ status: number; body: string; bytes: number; aborted: boolean; ms: number }>((resolve, reject) => {
      const t0 = Date.now();
      const req = request(`${front}${path}`, { agent: false }, async (res) => {
        let body = '';
        let bytes = 0;
        let aborted = false;
        if (onResponse) await onResponse(res);
        res.on('data', (c: Buffer) => {
          bytes += c.length;
          if (bytes < 4096) body += c.toString('latin1');
        });
        res.on('aborted', () => (aborted = true));
        res.on('error', () => (aborted = true));
        res.on('close', () => resolve({ status: res.statusCode!, body, bytes, aborted: aborted || !res.complete, ms: Date.now() - t0 }));
      });
      req.on('error', reject);
      req.end();
    });

  it('answers 504 in MLflow\'s error shape when MLflow sends no headers within the limit', async () => {
    const r = await get('/mute');
    expect(r.status).toBe(504);
    expect(JSON.parse(r.body)).toEqual({ error_code: 'GATEWAY_TIMEOUT', message: 'MLflow did not answer in time' });
    expect(r.ms).toBeGreaterThanOrEqual(290);
    expect(r.ms).toBeLessThan(3000);
  });

  it('times a call that streams the client\'s body on (undici\'s limits, which see the upload move) the same way', async () => {
    const t0 = Date.now();
    const r = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(`${front}/mute`, { method: 'POST', agent: false, headers: { 'Content-Type': 'application/octet-stream' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, body }));
      });
      req.on('error', reject);
      req.end(Buffer.alloc(10_000, 'u'));
    });
    expect(r.status).toBe(504);
    expect(JSON.parse(r.body)).toMatchObject({ error_code: 'GATEWAY_TIMEOUT' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
  });

  it('cuts the client off when MLflow falls silent halfway through an answer', async () => {
    const r = await get('/stalls');
    expect(r.status).toBe(200);
    expect(r.bytes).toBe(1024);
    expect(r.aborted).toBe(true);
    expect(r.ms).toBeLessThan(3000);
  });

  it('does not cut off a client that reads slowly: flowgate holding MLflow back is not MLflow falling silent', async () => {
    const r = await get('/big', async (res) => {
      res.pause();
      await sleep(1000); // more than three limits with nothing read
      res.resume();
    });
    expect(r.status).toBe(200);
    expect(r.aborted).toBe(false);
    expect(r.bytes).toBe(BIG);
  });

  it('fails a JSON call to a silent MLflow with 504', async () => {
    const client = upstreamJsonFor(upstream, '', 300);
    await expect(client.call('GET', '/mute', {})).rejects.toMatchObject({ code: 'GATEWAY_TIMEOUT' });
    await expect(client.call('GET', '/stalls', {})).rejects.toMatchObject({ code: 'GATEWAY_TIMEOUT' });
    await client.close();
  });

  it('watches nothing once calls are answered, whichever way they went', async () => {
    const client = upstreamJsonFor(upstream, '', 300);
    await Promise.all([client.call('GET', '/ok', {}), client.call('POST', '/ok', { a: 1 }), get('/big'), get('/ok')]);
    await get('/stalls');
    expect(client.silence.watching).toBe(0);
    expect(forwarder.silence.watching).toBe(0);
    await client.close();
  });
});
