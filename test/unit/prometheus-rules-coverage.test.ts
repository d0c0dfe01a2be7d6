import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../src/metrics/registry.js';

const DIR = fileURLToPath(new URL('../../deploy/prometheus/', import.meta.url));
type Rule = { alert: string; expr: string; for?: string; labels: Record<string, string> };
const rules = (parse(readFileSync(`${DIR}flowgate-rules.yml`, 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);
const tests = parse(readFileSync(`${DIR}flowgate-rules.test.yml`, 'utf8')) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> };

describe('deploy/prometheus: alerts for what FlowgateDown and the ratios cannot see', () => {
  it('alerts when no flowgate target exists, when shadow mode stays on, and when an after-hook fails', () => {
    const by = (name: string) => rules.find((r) => r.alert === name)!;
    expect(by('FlowgateAbsent').expr).toBe(`absent(${/up\{job=~"[^"]+"\}/.exec(by('FlowgateDown').expr)![0]})`);
    expect(by('FlowgateShadowMode').expr).toMatch(/^flowgate_enforcing == 0$/);
    expect(by('FlowgateAfterHookFailures').expr).toMatch(/increase\(flowgate_after_hook_failures_total\[/);
  });

  it('every alert is exercised by promtool test rules, firing at least once, and the tests pass', () => {
    const tested = tests.tests.flatMap((t) => t.alert_rule_test);
    for (const r of rules) expect(tested.some((t) => t.alertname === r.alert && t.exp_alerts.length > 0), r.alert).toBe(true);
    const run = spawnSync('promtool', ['test', 'rules', 'flowgate-rules.test.yml'], { cwd: DIR, encoding: 'utf8' });
    if (run.error) throw new Error('promtool not found: install the Debian package `prometheus` (scripts/setup.sh does)');
    expect(`${run.stdout}${run.stderr}`).toContain('SUCCESS');
    expect(run.status).toBe(0);
  });

  it('names only metrics flowgate exports: counters under rate/increase, gauges compared directly', async () => {
    const registry = new Registry();
    createMetrics({ version: 'test', registry, defaultMetrics: false });
    const types = new Map([...(await registry.metrics()).matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
    for (const r of rules)
      for (const [name] of r.expr.matchAll(/\bflowgate_[a-z_]+/g)) {
        const histogramPart = /^(.*)_(bucket|count|sum)$/.exec(name);
        if (histogramPart && types.get(histogramPart[1]!) === 'histogram') continue;
        expect(types.has(name), `${r.alert}: ${name} is not a metric flowgate exports`).toBe(true);
        if (types.get(name) === 'gauge') expect(r.expr, `${r.alert}: rate or increase over the gauge ${name}`).not.toMatch(new RegExp(`(rate|increase)\\(${name}`));
        else expect(types.get(name), `${r.alert}: ${name}`).toBe('counter');
      }
  });
});
