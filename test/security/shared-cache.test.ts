import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * The attacker shares a cache with the victim: a CDN or an ingress cache in front of flowgate that keys
 * on the URL and ignores cookies. MLflow's JSON answers carry no caching rules, yet what flowgate lets
 * through depends on who asked (a list filtered to the caller's grants, a read the caller's grant
 * allows). Every answer flowgate relays without rules of MLflow's own is marked `private` (no shared
 * cache stores it); rules MLflow did set (its artifact downloads) are kept. flowgate's own JSON is
 * `no-store` and `nosniff`.
 */
const V2 = '/api/2.0/mlflow';

let upstream: Server;
let fg: TestFlowgate;

beforeAll(async () => {
  upstream = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const own = req.url?.startsWith('/get-artifact') ? { 'Cache-Control': 'no-cache, max-age=0' } : {};
      const body = req.url?.startsWith(`${V2}/experiments/search`)
        ? JSON.stringify({ experiments: [{ experiment_id: '1', name: 'one' }, { experiment_id: '2', name: 'two' }] })
        : JSON.stringify({ experiment: { experiment_id: '1', name: 'one' } });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), ...own });
      res.end(body);
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`, FLOWGATE_DEFAULT_PERMISSION: 'NO_PERMISSIONS' });
  await request(fg.url).post(`${V2}/users/create`).set('Authorization', adminAuth()).send({ username: 'ann' }).expect(201);
}, 60_000);

afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  upstream?.closeAllConnections();
  await new Promise<void>((resolve) => upstream?.close(() => resolve()));
});

describe('answers that depend on the caller, in front of a shared cache', () => {
  it('a relayed read MLflow gave no caching rules is private', async () => {
    const r = await request(fg.url).get(`${V2}/experiments/get?experiment_id=1`).set('Authorization', adminAuth());
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toBe('private');
  });

  it('a list filtered to the caller (an after-hook rewrote it) is private', async () => {
    const token = (await request(fg.url).patch(`${V2}/permissions/users/access-token`).set('Authorization', adminAuth()).send({ username: 'ann' }).expect(200)).body.token as string;
    await request(fg.url).post(`${V2}/permissions/users/ann/experiments/1`).set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
    const r = await request(fg.url).post(`${V2}/experiments/search`).set('Authorization', basic('ann', token)).send({ max_results: 10 });
    expect(r.status, r.text).toBe(200);
    expect(r.body.experiments.map((e: { experiment_id: string }) => e.experiment_id)).toEqual(['1']);
    expect(r.headers['cache-control']).toMatch(/private|no-store/);
  });

  it("keeps the rules MLflow set itself, and flowgate's own JSON is no-store and nosniff", async () => {
    const kept = await request(fg.url).get('/get-artifact?path=a.txt&run_uuid=1').set('Authorization', adminAuth());
    expect(kept.headers['cache-control']).toBe('no-cache, max-age=0');
    const own = await request(fg.url).get(`${V2}/permissions/users/ann`).set('Authorization', adminAuth());
    expect(own.status).toBe(200);
    expect(own.headers['cache-control']).toBe('no-store');
    expect(own.headers['x-content-type-options']).toBe('nosniff');
  });
});
