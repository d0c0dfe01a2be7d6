import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInferenceMetrics, type InferenceResult } from '../../src/inference/metrics.js';
import type { AuthMethodLabel, AuthResultLabel } from '../../src/metrics/registry.js';
import { VERSION } from '../../src/version.js';
import { ADMIN, adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { eventually, parseMetrics, scrape, sum, type Sample } from '../helpers/prom.js';

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

/**
 * docs/operations.md's metrics table: each row's metric names (`_groups` after `flowgate_store_users`
 * is `flowgate_store_groups`; `process_*` a wildcard), its label names (backticked, outside
 * parentheses), and a label's values where the parentheses list them.
 */
function documentedMetrics(): { names: Map<string, Map<string, string[] | undefined>>; wildcards: RegExp[] } {
  const doc = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const section = doc.slice(doc.indexOf('## Metrics'), doc.indexOf('### Decision reasons'));
  const names = new Map<string, Map<string, string[] | undefined>>();
  const wildcards: RegExp[] = [];
  for (const line of section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| metric'))) {
    const [, metricCell, , labelCell] = line.split('|').map((c) => c.trim());
    const labels = new Map<string, string[] | undefined>();
    // Each label, then what its parentheses say (balanced: a link inside them has its own).
    for (let i = 0; i < labelCell!.length; ) {
      const m = /`([a-z_]+)`/y;
      m.lastIndex = i;
      const found = m.exec(labelCell!);
      if (!found) {
        if (labelCell![i] === '(') {
          let depth = 0;
          let j = i;
          for (; j < labelCell!.length; j++) if ((depth += labelCell![j] === '(' ? 1 : labelCell![j] === ')' ? -1 : 0) === 0) break;
          i = j + 1;
        } else i++;
        continue;
      }
      i = m.lastIndex;
      const values = /^ \(([a-z_]+(?:, [a-z_]+)+)\)/.exec(labelCell!.slice(i));
      labels.set(found[1]!, values ? values[1]!.split(', ') : undefined);
    }
    const tokens = [...metricCell!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
    for (const token of tokens) {
      if (token.includes('*')) wildcards.push(new RegExp(`^${token.replace('*', '.*')}$`));
      else names.set(token.startsWith('_') ? tokens[0]!.replace(/_[a-z]+$/, '') + token : token, labels);
    }
  }
  return { names, wildcards };
}

describe('docs/operations.md metrics table', () => {
  it('names every metric a scrape shows, each with its labels, and none that is not there', async () => {
    await request(fg.url).get(EXPERIMENT).set('Authorization', adminAuth());
    const { text, samples } = await scrape(fg.metricsUrl);
    // The inference metrics are registered only with inference routes (test/api/inference-wired.test.ts scrapes them).
    const inference = new Registry();
    createInferenceMetrics(inference).record('route', 'allowed', 0.01);
    const inferenceText = await inference.metrics();
    const all = [...text.matchAll(/^# TYPE (\S+) \S+$/gm), ...inferenceText.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]!);
    const { names, wildcards } = documentedMetrics();
    expect(names.size).toBeGreaterThan(10);
    const undocumented = all.filter((n) => !names.has(n) && !wildcards.some((w) => w.test(n)));
    expect(undocumented, 'metrics a scrape shows that the table does not name').toEqual([]);
    expect([...names.keys()].filter((n) => !all.includes(n)), 'metrics the table names that no scrape shows').toEqual([]);
    for (const w of wildcards) expect(all.some((n) => w.test(n)), String(w)).toBe(true);
    // Label names, wherever a sample shows them (a histogram's on its _count).
    const seen = [...samples, ...parseMetrics(inferenceText)];
    let checked = 0;
    for (const [name, labels] of names) {
      const sample = seen.find((x) => x.name === name || x.name === `${name}_count`);
      if (sample === undefined) continue;
      expect(Object.keys(sample.labels).sort(), name).toEqual([...labels.keys()].sort());
      checked++;
    }
    expect(checked).toBeGreaterThanOrEqual(10);
  });

  it('lists every value of the labels whose values it lists', () => {
    // Records over the code's label types: a new value fails to compile here until it is added, then fails below until documented.
    const method: Record<AuthMethodLabel, true> = { basic: true, bearer: true, session: true, none: true };
    const result: Record<AuthResultLabel, true> = { success: true, failure: true, anonymous: true };
    const inferenceResult: Record<InferenceResult, true> = {
      allowed: true,
      health: true,
      missing_key: true,
      wrong_key: true,
      bad_request: true,
      not_found: true,
      upstream_error: true,
    };
    const { names } = documentedMetrics();
    expect(names.get('flowgate_authn_attempts_total')!.get('method')).toEqual(Object.keys(method));
    expect(names.get('flowgate_authn_attempts_total')!.get('result')).toEqual(Object.keys(result));
    expect(names.get('flowgate_inference_requests_total')!.get('result')).toEqual(Object.keys(inferenceResult));
    expect(names.get('flowgate_cache_requests_total')!.get('result')).toEqual(['hit', 'miss']);
  });
});

describe('deploy/prometheus FlowgateAuthenticationFailures', () => {
  it('says what the log line of a refused credential carries', async () => {
    const rules = readFileSync(new URL('../../deploy/prometheus/flowgate-rules.yml', import.meta.url), 'utf8');
    const description = /alert: FlowgateAuthenticationFailures[\s\S]*?description: >-\n([\s\S]*?)\n\n/.exec(rules)![1]!.replace(/\s+/g, ' ');
    const res = await fetch(fg.url + EXPERIMENT, { headers: { Authorization: basic('bob', 'fgt_wrong-token-hunter2'), 'X-Request-Id': 'refused-basic-1' } });
    expect(res.status).toBe(401);
    const line = await eventually(() => {
      const found = fg.logs.flatMap((c) => c.split('\n')).find((l) => l.includes('"refused-basic-1"'));
      expect(found).toBeDefined();
      return JSON.parse(found!) as Record<string, unknown>;
    });
    expect(line).toMatchObject({ requestId: 'refused-basic-1', status: 401, reason: 'UNAUTHENTICATED' });
    expect(line.user).toBeUndefined();
    expect(JSON.stringify(line)).not.toContain('hunter2');
    expect(description).toContain('status 401');
    expect(description).toContain('UNAUTHENTICATED');
    expect(description).toContain('no user');
    expect(description).not.toMatch(/name[sd]? the user/);
  });
});
