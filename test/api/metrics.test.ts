import { spawn, spawnSync } from 'node:child_process';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION } from '../../src/version.js';
import { ADMIN, adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { eventually, scrape, sum, type Sample } from '../helpers/prom.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let bobToken: string;

beforeAll(async () => {
  upstream = await startStubUpstream((r) =>
    r.url.startsWith('/api/2.0/mlflow/experiments/get')
      ? { status: 200, body: { experiment: { experiment_id: '1', name: 'e1' } } }
      : { status: 200, body: { ok: true } },
  );
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  const created = await request(fg.url)
    .post('/api/2.0/mlflow/users/create')
    .set('Authorization', adminAuth())
    .send({ username: 'bob', display_name: 'Bob', is_admin: false, is_service_account: false });
  expect(created.status).toBe(201);
  const minted = await request(fg.url)
    .patch('/api/2.0/mlflow/permissions/users/access-token')
    .set('Authorization', adminAuth())
    .send({ username: 'bob' });
  expect(minted.status).toBe(200);
  bobToken = minted.body.token as string;
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const EXPERIMENT = '/api/2.0/mlflow/experiments/get?experiment_id=1';
const delta = (before: Sample[], after: Sample[], name: string, match: Record<string, string> = {}) =>
  sum(after, name, match) - sum(before, name, match);

describe('metrics listener', () => {
  it('serves /metrics on its own port and nothing else there', async () => {
    expect(new URL(fg.metricsUrl).port).not.toBe(new URL(fg.url).port);
    const res = await fetch(fg.metricsUrl);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    expect(await res.text()).toContain('# HELP flowgate_build_info');
    const base = fg.metricsUrl.replace(/\/metrics$/, '');
    for (const path of ['/', '/healthz', '/metricsx', '/metrics/x', '/api/2.0/mlflow/experiments/search'])
      expect((await fetch(base + path)).status, path).toBe(404);
    expect((await fetch(fg.metricsUrl, { method: 'POST' })).status).toBe(405);
  });

  it('does not serve metrics on the public port, with or without credentials', async () => {
    const anonymous = await request(fg.url).get('/metrics');
    expect(anonymous.status).not.toBe(200);
    expect(anonymous.text).not.toContain('flowgate_');
    const seenBefore = upstream.seen.length;
    const admin = await request(fg.url).get('/metrics').set('Authorization', adminAuth());
    // Whatever the gate does with the path (forward to MLflow or refuse), flowgate never answers it itself.
    expect(admin.text).not.toContain('# HELP');
    expect(admin.text).not.toContain('flowgate_build_info');
    if (admin.status === 200) expect(upstream.seen.length).toBe(seenBefore + 1);
  });

  it('counts exactly the calls made: decisions, authentication, caches, upstream', async () => {
    const before = (await scrape(fg.metricsUrl)).samples;

    for (let i = 0; i < 3; i++) expect((await request(fg.url).get(EXPERIMENT).set('Authorization', adminAuth())).status).toBe(200);
    // bob has no grant on experiment 1 (default NO_PERMISSIONS): denied by any gate.
    for (let i = 0; i < 2; i++) expect((await request(fg.url).get(EXPERIMENT).set('Authorization', basic('bob', bobToken))).status).toBe(403);
    expect((await request(fg.url).get(EXPERIMENT).set('Authorization', basic('bob', 'fgt_wrong'))).status).toBe(401);
    expect((await request(fg.url).get(EXPERIMENT)).status).toBe(401);

    const after = await eventually(async () => {
      const s = (await scrape(fg.metricsUrl)).samples;
      expect(delta(before, s, 'flowgate_authz_decisions_total')).toBe(7);
      expect(sum(s, 'flowgate_http_requests_in_flight')).toBe(0);
      return s;
    });
    const decisions = 'flowgate_authz_decisions_total';
    expect(delta(before, after, decisions, { decision: 'allow' })).toBe(3);
    expect(delta(before, after, decisions, { decision: 'deny' })).toBe(4);
    expect(delta(before, after, decisions, { decision: 'deny', reason: 'UNAUTHENTICATED' })).toBe(2);
    // Timed decisions: the gate ran for 3 allowed and 3 denied calls (the wrong token failed earlier, in authentication).
    expect(delta(before, after, 'flowgate_authz_decision_duration_seconds_count', { decision: 'allow' })).toBe(3);
    expect(delta(before, after, 'flowgate_authz_decision_duration_seconds_count', { decision: 'deny' })).toBe(3);

    const authn = 'flowgate_authn_attempts_total';
    expect(delta(before, after, authn, { method: 'basic', result: 'success' })).toBe(5);
    expect(delta(before, after, authn, { method: 'basic', result: 'failure' })).toBe(1);
    expect(delta(before, after, authn, { method: 'none', result: 'anonymous' })).toBe(1);

    expect(delta(before, after, 'flowgate_upstream_request_duration_seconds_count', { status_class: '2xx' })).toBe(3);
    expect(delta(before, after, 'flowgate_upstream_request_duration_seconds_count')).toBe(3);

    const caches = 'flowgate_cache_requests_total';
    expect(delta(before, after, caches, { cache: 'token' })).toBe(6);
    expect(delta(before, after, caches, { cache: 'token', result: 'miss' })).toBeGreaterThanOrEqual(1); // the wrong token
    expect(delta(before, after, caches, { cache: 'principal' })).toBe(5);
  });

  it('times the calls flowgate makes itself for a filtered search, and tags them with the request id and user', async () => {
    const before = (await scrape(fg.metricsUrl)).samples;
    const seenBefore = upstream.seen.length;
    const res = await request(fg.url)
      .post('/api/2.0/mlflow/experiments/search')
      .set('Authorization', basic('bob', bobToken))
      .set('X-Request-Id', 'search-req-1')
      .send({ max_results: 5 });
    expect(res.status).toBe(200);
    const calls = upstream.seen.slice(seenBefore);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe('/api/2.0/mlflow/experiments/search');
    expect(calls[0]!.headers['x-request-id']).toBe(res.headers['x-request-id']);
    expect(calls[0]!.headers['x-forwarded-user']).toBe('bob');
    expect(calls[0]!.headers.authorization).toBeUndefined();
    const route = { route: '/api/2.0/mlflow/experiments/search' };
    await eventually(async () => {
      const after = (await scrape(fg.metricsUrl)).samples;
      expect(delta(before, after, 'flowgate_upstream_request_duration_seconds_count', { ...route, status_class: '2xx' })).toBe(1);
      expect(delta(before, after, 'flowgate_upstream_request_duration_seconds_count')).toBe(1);
    });
  });

  it('labels only from bounded sets: no user names, tokens, raw paths or ids', async () => {
    const { samples } = await scrape(fg.metricsUrl);
    const ours = samples.filter((s) => s.name.startsWith('flowgate_'));
    for (const s of ours) {
      for (const [k, v] of Object.entries(s.labels)) {
        expect(v, `${s.name} ${k}`).not.toMatch(/bob|admin-token|fgt_|\?|experiment_id=/);
        if (k === 'resource_type') expect(['experiment', 'registered_model', 'prompt', 'none', 'admin']).toContain(v);
        if (k === 'decision') expect(['allow', 'deny']).toContain(v);
      }
    }
    const admin = ours.filter((s) => s.name === 'flowgate_authz_decisions_total' && s.labels.resource_type === 'admin');
    expect(admin.length).toBeGreaterThan(0);
    for (const s of admin) expect(s.labels.route, 'admin routes are labelled by template').toMatch(/^\/mlflow\//);
  });

  it('reports store sizes, build info and process metrics', async () => {
    const { samples } = await scrape(fg.metricsUrl);
    expect(sum(samples, 'flowgate_store_users')).toBe(2);
    expect(sum(samples, 'flowgate_store_groups')).toBe(0);
    expect(sum(samples, 'flowgate_store_grants')).toBe(0);
    expect(sum(samples, 'flowgate_store_active_tokens')).toBe(2);
    expect(sum(samples, 'flowgate_build_info', { version: VERSION, node: process.version })).toBe(1);
    expect(samples.some((s) => s.name === 'process_resident_memory_bytes')).toBe(true);
    expect(samples.some((s) => s.name.startsWith('nodejs_eventloop_lag'))).toBe(true);
    expect(ADMIN.username).toBe('admin');
  });

  it('passes promtool check metrics', async () => {
    const present = spawnSync('promtool', ['--version'], { stdio: 'ignore' });
    if (present.error) {
      console.warn('\n!!!!! promtool NOT FOUND: skipping `promtool check metrics` (install Debian package `prometheus`) !!!!!\n');
      return;
    }
    const { text } = await scrape(fg.metricsUrl);
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('close', (code) => resolve({ code, out }));
      child.stdin.end(text);
    });
    expect(result.out.trim()).toBe('');
    expect(result.code).toBe(0);
  });
});
