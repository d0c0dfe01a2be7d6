import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { startPrometheus, type PrometheusServer } from '../helpers/prometheus-server.js';
import { eventually } from '../helpers/prom.js';

/**
 * The Grafana dashboard and the alerting rules against a real Prometheus that scrapes flowgate in
 * front of the real MLflow while a user is allowed, denied and mistyped a token: every panel's
 * query is valid PromQL and shows data, and every rule evaluates without error.
 */
const DEPLOY = fileURLToPath(new URL('../../deploy/', import.meta.url));
interface Panel {
  readonly title: string;
  readonly targets: ReadonlyArray<{ readonly expr: string }>;
}
const DASHBOARD = JSON.parse(readFileSync(`${DEPLOY}grafana/flowgate-dashboard.json`, 'utf8')) as {
  panels: Panel[];
  templating: { list: Array<{ name: string; definition?: string }> };
};
/** No model server runs here, so the inference panel may be empty (its query must still be valid). */
const MAY_BE_EMPTY = new Set(['Inference calls']);
/** Grafana's variables as this test's Prometheus sees them: 1 s scrapes, so a 15 s window holds many. */
const asQuery = (expr: string) => expr.replaceAll('$__rate_interval', '15s').replaceAll('$job', 'flowgate');

let mlflow: MlflowServer;
let fg: TestFlowgate;
let prometheus: PrometheusServer;
/** Queries are evaluated just after the traffic (Unix seconds), so a slow test run cannot slide the window past it. */
let evaluatedAt = 0;

/** A call through flowgate as `auth`: its status and JSON answer (or null). */
async function call(path: string, auth: string, method = 'GET', body?: unknown): Promise<{ status: number; json: Record<string, unknown> | null }> {
  const res = await fetch(`${fg.url}${path}`, {
    method,
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}
const post = (path: string, auth: string, body: unknown) => call(path, auth, 'POST', body);

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  prometheus = await startPrometheus([new URL(fg.metricsUrl).host], [`${DEPLOY}prometheus/flowgate-rules.yml`]);

  const created = async (name: string) => (await post('/api/2.0/mlflow/experiments/create', adminAuth(), { name })).json!.experiment_id as string;
  const open = await created('dashboard-open');
  const closed = await created('dashboard-closed');
  expect((await post('/api/2.0/mlflow/users/create', adminAuth(), { username: 'ana' })).status).toBe(201);
  expect((await post('/api/2.0/mlflow/permissions/users/ana/experiments/' + open, adminAuth(), { permission: 'READ' })).status).toBe(201);
  const expiration = new Date(Date.now() + 86_400_000).toISOString();
  const minted = await call('/api/2.0/mlflow/permissions/users/access-token', adminAuth(), 'PATCH', { username: 'ana', expiration });
  const ana = basic('ana', minted.json!.token as string);

  // Seven seconds of a team's ordinary traffic, seen by Prometheus's one-second scrapes.
  const until = Date.now() + 7000;
  while (Date.now() < until) {
    expect((await call(`/api/2.0/mlflow/experiments/get?experiment_id=${open}`, ana)).status).toBe(200);
    expect((await call(`/api/2.0/mlflow/experiments/get?experiment_id=${closed}`, ana)).status).toBe(403);
    expect((await post('/api/2.0/mlflow/experiments/search', ana, { max_results: 10 })).status).toBe(200);
    expect((await call('/api/2.0/mlflow/experiments/get?experiment_id=987654', adminAuth())).status).toBe(404);
    expect((await call(`/api/2.0/mlflow/experiments/get?experiment_id=${open}`, basic('ana', 'fgt_mistyped'))).status).toBe(401);
    await new Promise((r) => setTimeout(r, 100));
  }
  // Two more scrapes, so the last requests are in the TSDB.
  await new Promise((r) => setTimeout(r, 2500));
  evaluatedAt = Date.now() / 1000;
}, 240_000);

afterAll(async () => {
  await prometheus?.stop();
  await fg?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

describe('Grafana dashboard (deploy/grafana/flowgate-dashboard.json) on a real Prometheus', () => {
  it("offers flowgate's job in its job variable", async () => {
    const variable = DASHBOARD.templating.list.find((v) => v.name === 'job');
    expect(variable?.definition).toBe('label_values(flowgate_build_info, job)');
    expect(await prometheus.get<string[]>('/api/v1/label/job/values?match[]=flowgate_build_info')).toEqual(['flowgate']);
  });

  it('has a valid query with data in every panel', async () => {
    expect(DASHBOARD.panels.length).toBeGreaterThanOrEqual(12);
    for (const panel of DASHBOARD.panels) {
      for (const target of panel.targets) {
        const series = await prometheus.query(asQuery(target.expr), evaluatedAt);
        if (!MAY_BE_EMPTY.has(panel.title)) expect(series.length, `${panel.title}: ${target.expr}`).toBeGreaterThan(0);
      }
    }
  });

  it('shows what the traffic was: the denial and its reason, the bad token, MLflow 2xx and 4xx', async () => {
    const targetOf = (title: string) => asQuery(DASHBOARD.panels.find((p) => p.title === title)!.targets[0]!.expr);
    const labels = async (title: string, label: string) => (await prometheus.query(targetOf(title), evaluatedAt)).map((s) => s.metric[label]).sort();
    expect(await labels('Decisions per second', 'decision')).toEqual(['allow', 'deny']);
    expect(await labels('Denials by reason', 'reason')).toContain('default-permission');
    expect(await labels('MLflow answers by status class', 'status_class')).toEqual(['2xx', '4xx']);
    const signIns = (await prometheus.query(targetOf('Sign-ins'), evaluatedAt)).map((s) => `${s.metric.method} ${s.metric.result}`);
    expect(signIns).toEqual(expect.arrayContaining(['basic success', 'basic failure']));
  });
});

describe('alerting rules (deploy/prometheus/flowgate-rules.yml) on a real Prometheus', () => {
  it('evaluate against the scraped series without errors', async () => {
    type Rule = { name: string; health: string; lastError?: string };
    const rules = await eventually(async () => {
      const { groups } = await prometheus.get<{ groups: Array<{ rules: Rule[] }> }>('/api/v1/rules');
      const all = groups.flatMap((g) => g.rules);
      expect(all.length).toBe(8);
      for (const rule of all) expect(rule.health, `${rule.name}: ${rule.lastError ?? ''}`).toBe('ok');
      return all;
    }, 20_000);
    expect(rules.every((r) => !r.lastError)).toBe(true);
  });
});
