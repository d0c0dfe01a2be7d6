import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { createMetrics } from '../../src/metrics/registry.js';
import { PROBE_PATH } from '../../src/upstream/mlflow-probe.js';

const DIR = fileURLToPath(new URL('../../deploy/prometheus/', import.meta.url));
const RULES = readFileSync(`${DIR}flowgate-rules.yml`, 'utf8');

function promtool(...args: string[]) {
  const r = spawnSync('promtool', args, { cwd: DIR, encoding: 'utf8' });
  if (r.error) throw new Error('promtool not found: install the Debian package `prometheus` (scripts/setup.sh does)');
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('deploy/prometheus alerting rules', () => {
  it('pass promtool check rules', () => {
    const r = promtool('check', 'rules', 'flowgate-rules.yml');
    expect(r.out).toContain('SUCCESS: 8 rules found');
    expect(r.code).toBe(0);
  });

  it('fire on the series that should raise them and stay quiet on healthy ones (promtool test rules)', () => {
    const r = promtool('test', 'rules', 'flowgate-rules.test.yml');
    expect(r.out).toContain('SUCCESS');
    expect(r.code).toBe(0);
  });

  it('name only metrics flowgate exports, with the type each expression needs', async () => {
    const registry = new Registry();
    createMetrics({ version: 'test', registry, defaultMetrics: false });
    const exposition = await registry.metrics();
    const types = new Map([...exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    const groups = (parse(RULES) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> }).groups;
    const named = new Set(groups.flatMap((g) => g.rules.flatMap((rule) => [...rule.expr.matchAll(/\bflowgate_[a-z_]+/g)].map((m) => m[0]))));
    expect(named.size).toBeGreaterThanOrEqual(4);
    for (const name of named) {
      const histogramPart = /^(.*)_(bucket|count|sum)$/.exec(name);
      if (histogramPart && types.get(histogramPart[1]!) === 'histogram') continue;
      // flowgate_enforcing is a gauge compared directly (FlowgateShadowMode); the rest go through rate/increase.
      expect(types.get(name), `${name} is not a metric flowgate exports`).toBe(name === 'flowgate_enforcing' ? 'gauge' : 'counter');
    }
  });
  it('say what /readyz asks MLflow, as docs/operations.md does (not /health, which MLflow answers whatever Host)', () => {
    const groups = (parse(RULES) as { groups: Array<{ rules: Array<{ alert: string; annotations: { description: string } }> }> }).groups;
    const description = groups.flatMap((g) => g.rules).find((r) => r.alert === 'FlowgateMlflowUnavailable')!.annotations.description;
    expect(description).toContain(PROBE_PATH);
    expect(description).not.toMatch(/\/health\b/);
    const doc = readFileSync(fileURLToPath(new URL('../../docs/operations.md', import.meta.url)), 'utf8');
    const health = doc.slice(doc.indexOf('## Health'), doc.indexOf('## Logs'));
    expect(health).toContain(PROBE_PATH);
    expect(health).not.toMatch(/does not answer `\/health`/);
  });
  // The PodMonitor's port and job name are checked on the rendered overlays: test/e2e/deploy-render.test.ts.
});
