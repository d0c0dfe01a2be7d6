import type { Counter } from 'prom-client';
import { Registry } from 'prom-client';
import { describe, expect, it, vi } from 'vitest';
import { batchedCounter } from '../../src/metrics/batched-counter.js';
import { createMetrics } from '../../src/metrics/registry.js';

/**
 * A batched counter keeps one entry per label set, however often a caller asks for it: each entry is
 * handed to prom-client at every read, so one entry per event grew memory and scrape time with the
 * number of events (a million after-hook failures: 109 MB, a 163 ms scrape).
 */
describe('batchedCounter series', () => {
  it('the same labels give the same series, other labels another', async () => {
    const registry = new Registry();
    const c = batchedCounter({ name: 'fg_series_total', help: 'test', labelNames: ['a', 'b'] as const, registers: [registry] });
    const first = c.series({ a: 'x', b: 'y' });
    expect(c.series({ b: 'y', a: 'x' })).toBe(first);
    expect(c.series({ a: 'x', b: 'z' })).not.toBe(first);
    const inc = vi.spyOn(c.counter, 'inc');
    for (let i = 0; i < 1000; i++) c.series({ a: 'x', b: 'y' })();
    expect(await registry.metrics()).toContain('fg_series_total{a="x",b="y"} 1000');
    expect(inc).toHaveBeenCalledTimes(1);
  });

  it('flowgate_after_hook_failures_total: one series per hook after many failures', async () => {
    const m = createMetrics({ version: 't', defaultMetrics: false });
    const counter = m.registry.getSingleMetric('flowgate_after_hook_failures_total') as Counter<'hook'>;
    const inc = vi.spyOn(counter, 'inc');
    for (let i = 0; i < 10_000; i++) m.afterHookFailed('create_experiment');
    m.afterHookFailed('delete_run');
    const text = await m.registry.getSingleMetricAsString('flowgate_after_hook_failures_total');
    expect(text).toContain('flowgate_after_hook_failures_total{hook="create_experiment"} 10000');
    expect(text).toContain('flowgate_after_hook_failures_total{hook="delete_run"} 1');
    expect(inc).toHaveBeenCalledTimes(2);
  });
});
