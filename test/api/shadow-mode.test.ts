import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { ADMIN, adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { eventually, scrape, sum } from '../helpers/prom.js';

const EXPERIMENT = '/api/2.0/mlflow/experiments/get?experiment_id=1';
const ROUTE = '/api/2.0/mlflow/experiments/get';

interface RequestLine {
  requestId?: string;
  decision?: string;
  reason?: string;
  status?: number;
}
const requestLine = (logs: readonly string[], requestId: string): RequestLine | undefined =>
  logs
    .flatMap((l) => l.split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RequestLine & { msg?: string })
    .find((l) => l.msg === 'request' && l.requestId === requestId);

describe('shadow mode start rule', () => {
  it('refuses FLOWGATE_ENFORCE=false without the bootstrap admin token', () => {
    let error: unknown;
    try {
      loadConfig({ FLOWGATE_ENFORCE: 'false' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([
      'FLOWGATE_ENFORCE: false (shadow mode) requires the bootstrap admin (FLOWGATE_ADMIN_USERNAME with FLOWGATE_ADMIN_TOKEN or FLOWGATE_ADMIN_TOKEN_FILE)',
    ]);
  });

  it('accepts it with the bootstrap admin, from the variable or the file, and enforces by default', () => {
    expect(loadConfig({}).enforce).toBe(true);
    const withToken = loadConfig({ FLOWGATE_ENFORCE: 'false', FLOWGATE_ADMIN_USERNAME: ADMIN.username, FLOWGATE_ADMIN_TOKEN: ADMIN.token });
    expect(withToken.enforce).toBe(false);
    const withFile = loadConfig(
      { FLOWGATE_ENFORCE: 'false', FLOWGATE_ADMIN_USERNAME: ADMIN.username, FLOWGATE_ADMIN_TOKEN_FILE: '/secret/token' },
      () => ADMIN.token,
    );
    expect(withFile.enforce).toBe(false);
  });
});

describe('shadow mode (FLOWGATE_ENFORCE=false)', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let bobToken: string;

  beforeAll(async () => {
    upstream = await startStubUpstream((r) =>
      r.url.startsWith(ROUTE) ? { status: 200, body: { experiment: { experiment_id: '1', name: 'e1' } } } : { status: 200, body: { ok: true } },
    );
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_ENFORCE: 'false' });
    const created = await request(fg.url)
      .post('/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .send({ username: 'bob', display_name: 'Bob', is_admin: false, is_service_account: false });
    expect(created.status).toBe(201);
    const minted = await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'bob' });
    expect(minted.status).toBe(200);
    bobToken = minted.body.token as string;
  });
  afterAll(async () => {
    await fg?.close();
    await upstream?.close();
    if (fg) removeDir(fg.dir);
  });

  it('forwards a call enforcement denies, logs it as would_deny with the reason, and counts it', async () => {
    const before = (await scrape(fg.metricsUrl)).samples;
    const seen = upstream.seen.length;
    // bob has no grant on experiment 1 (default NO_PERMISSIONS): enforcing, this is a 403.
    const res = await request(fg.url).get(EXPERIMENT).set('Authorization', basic('bob', bobToken)).set('X-Request-Id', 'shadow-denied-1');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ experiment: { experiment_id: '1', name: 'e1' } });
    expect(upstream.seen.length).toBe(seen + 1);
    expect(upstream.seen.at(-1)!.url).toBe(EXPERIMENT);

    const line = await eventually(() => {
      const l = requestLine(fg.logs, 'shadow-denied-1');
      expect(l).toBeDefined();
      return l!;
    });
    expect(line).toMatchObject({ decision: 'would_deny', reason: 'default-permission', status: 200 });

    await eventually(async () => {
      const after = (await scrape(fg.metricsUrl)).samples;
      const match = { decision: 'would_deny', reason: 'default-permission', route: ROUTE };
      expect(sum(after, 'flowgate_authz_decisions_total', match) - sum(before, 'flowgate_authz_decisions_total', match)).toBe(1);
    });
  });

  it('forwards a path no catalog row knows, as would_deny route-not-found', async () => {
    const seen = upstream.seen.length;
    const res = await request(fg.url).get('/api/2.0/mlflow/not-a-route').set('Authorization', basic('bob', bobToken)).set('X-Request-Id', 'shadow-unknown-1');
    expect(res.status).toBe(200);
    expect(upstream.seen.length).toBe(seen + 1);
    const line = await eventually(() => {
      const l = requestLine(fg.logs, 'shadow-unknown-1');
      expect(l).toBeDefined();
      return l!;
    });
    expect(line).toMatchObject({ decision: 'would_deny', reason: 'route-not-found' });
  });

  it('still counts allowed calls as allow', async () => {
    const before = (await scrape(fg.metricsUrl)).samples;
    expect((await request(fg.url).get(EXPERIMENT).set('Authorization', adminAuth())).status).toBe(200);
    await eventually(async () => {
      const after = (await scrape(fg.metricsUrl)).samples;
      const d = (decision: string) => sum(after, 'flowgate_authz_decisions_total', { decision, route: ROUTE }) - sum(before, 'flowgate_authz_decisions_total', { decision, route: ROUTE });
      expect(d('allow')).toBe(1);
      expect(d('would_deny')).toBe(0);
    });
  });

  it('still refuses calls without valid credentials (401), forwarding nothing', async () => {
    const seen = upstream.seen.length;
    expect((await request(fg.url).get(EXPERIMENT)).status).toBe(401);
    expect((await request(fg.url).get(EXPERIMENT).set('Authorization', basic('bob', 'fgt_wrong'))).status).toBe(401);
    expect(upstream.seen.length).toBe(seen);
  });

  it('never shadows the admin API', async () => {
    const res = await request(fg.url)
      .post('/api/2.0/mlflow/permissions/users/bob/experiments/1')
      .set('Authorization', basic('bob', bobToken))
      .send({ permission: 'MANAGE' });
    expect(res.status).toBe(403);
    const grants = await request(fg.url).get('/api/2.0/mlflow/permissions/users/bob/experiments').set('Authorization', adminAuth());
    expect(JSON.stringify(grants.body)).not.toContain('MANAGE');
  });

  it('says so at start, on /readyz and in the flowgate_enforcing gauge', async () => {
    expect(fg.logs.some((l) => l.includes('"level":"warn"') && l.includes('SHADOW MODE'))).toBe(true);
    const ready = await request(fg.url).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ready', enforcing: false });
    expect(sum((await scrape(fg.metricsUrl)).samples, 'flowgate_enforcing')).toBe(0);
  });
});

describe('enforcing (the default)', () => {
  it('shows flowgate_enforcing 1 and no enforcing field on /readyz', async () => {
    const upstream = await startStubUpstream();
    const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
    try {
      expect(sum((await scrape(fg.metricsUrl)).samples, 'flowgate_enforcing')).toBe(1);
      expect((await request(fg.url).get('/readyz')).body).not.toHaveProperty('enforcing');
      expect(fg.logs.some((l) => l.includes('SHADOW MODE'))).toBe(false);
    } finally {
      await fg.close();
      await upstream.close();
      removeDir(fg.dir);
    }
  });
});
