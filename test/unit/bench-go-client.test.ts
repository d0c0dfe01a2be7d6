// The bench's latency rounds trust the Go load client (bench/loadgen) for their p99s: it must send
// at the rate asked, count every answer by status, and take each latency from the request's intended
// send time (the wait for a free connection included), so that a server that falls behind shows its
// backlog rather than hiding it.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildGoClient, spawnGoClient, type GoClient } from '../../bench/go-client.mjs';

interface Result {
  count: number;
  ok: number;
  statuses: Record<string, number>;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  sendLagP99: number | null;
}

let dir: string;
let client: GoClient;
let server: Server;
let base: string;
let slowMs = 0;
const bodies: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fg-loadgen-test-'));
  const built = buildGoClient(join(import.meta.dirname, '../../bench/loadgen'), dir);
  if (!built.binary) throw new Error(`the Go load client did not build: ${built.reason}`);
  client = spawnGoClient(built.binary);
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST') bodies.push(`${req.headers['x-probe']} ${Buffer.concat(chunks).toString()}`);
      const status = req.url?.startsWith('/missing') ? 404 : 200;
      setTimeout(() => res.writeHead(status, { 'content-type': 'text/plain' }).end('x'.repeat(512)), slowMs);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 120_000);

afterAll(async () => {
  client?.kill('SIGKILL');
  await new Promise((r) => server?.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** One run the way bench/run.mjs drives it: options, a 'warm' answer, 'go', then the result. */
function drive(opts: Record<string, unknown>): Promise<Result> {
  return new Promise((resolve, reject) => {
    const onMessage = (m: { warm?: boolean; result?: Result; error?: string }) => {
      if (m.warm) return void client.send('go');
      client.off('message', onMessage);
      if (m.error) reject(new Error(m.error));
      else resolve(m.result!);
    };
    client.on('message', onMessage);
    client.send({ ...opts, onWarm: true });
  });
}

describe('the Go load client', () => {
  it('sends at the fixed rate asked, with each request of the mix as written, and counts answers by status', async () => {
    slowMs = 0;
    const r = await drive({
      base,
      mix: [
        { method: 'GET', path: '/ok', headers: {} },
        { method: 'POST', path: '/ok', headers: { 'x-probe': 'p1', 'content-type': 'application/json' }, body: '{"a":1}' },
        { method: 'GET', path: '/missing', headers: {} },
      ],
      concurrency: 4,
      durationMs: 1000,
      maxRequests: 100_000,
      rate: 600,
      warmupMs: 200,
    });
    expect(r.count).toBeGreaterThanOrEqual(570);
    expect(r.count).toBeLessThanOrEqual(602);
    expect((r.statuses['200'] ?? 0) + (r.statuses['404'] ?? 0)).toBe(r.count);
    expect(r.statuses['404']).toBeGreaterThanOrEqual(Math.floor(r.count / 3) - 1);
    expect(r.ok).toBe(r.statuses['200']);
    expect(bodies.length).toBeGreaterThan(0);
    expect(new Set(bodies)).toEqual(new Set(['p1 {"a":1}']));
    expect(r.sendLagP99).not.toBeNull();
    expect(r.sendLagP99!).toBeLessThan(50);
    expect(r.p99).toBeLessThanOrEqual(r.max);
  });

  it('counts the wait for a connection as latency: a server that falls behind shows its whole backlog', async () => {
    // One connection to a server that needs 20 ms an answer, asked for one every 10 ms: the 50th request
    // waits behind the 49 before it, ~500 ms. A client that timed only the exchange on its connection
    // would say ~20 ms.
    slowMs = 20;
    const r = await drive({ base, mix: [{ method: 'GET', path: '/ok', headers: {} }], concurrency: 1, durationMs: 500, maxRequests: 1000, rate: 100 });
    expect(r.count).toBe(50);
    expect(r.ok).toBe(50);
    expect(r.p50).toBeGreaterThan(150);
    expect(r.max).toBeGreaterThan(400);
  });

  it('in closed loops, runs its connections back to back until the time is up', async () => {
    slowMs = 0;
    const r = await drive({ base, mix: [{ method: 'GET', path: '/ok', headers: {} }], concurrency: 4, durationMs: 500, maxRequests: 1_000_000 });
    expect(r.count).toBeGreaterThan(100);
    expect(r.ok).toBe(r.count);
    expect(r.sendLagP99).toBeNull();
  });
});
