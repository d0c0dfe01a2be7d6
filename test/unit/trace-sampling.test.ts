import type { IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { TracingConfig } from '../../src/config.js';
import { startTracing } from '../../src/tracing/start-tracing.js';
import type { Tracing } from '../../src/tracing/types.js';

/**
 * docs/operations.md: FLOWGATE_OTEL_SAMPLE_RATIO decides which requests are traced, "so a client can neither
 * push every request into the traces nor keep its own out". A client's traceparent is continued (its trace id
 * kept), so a ratio applied to that id was the client's choice: an id like 0…01 was always kept, ff…00 never,
 * whatever the ratio. A request continuing a client's trace is now kept by a fresh draw of flowgate's.
 */
const ALWAYS_BY_ID = '00000000000000000000000000000001';
const NEVER_BY_ID = 'ffffffff000000000000000000000000';
const config = (sampleRatio: number): TracingConfig => ({ endpoint: 'http://127.0.0.1:9/v1/traces', serviceName: 't', sampleRatio });

let tracing: Tracing | undefined;
afterEach(async () => {
  await tracing?.shutdown();
  tracing = undefined;
});

/** The sampled flag flowgate passes to MLflow for a request continuing the client's trace, and the trace id it passes. */
function forwarded(traceId: string, clientFlag: '00' | '01'): { traceId: string; sampled: boolean } {
  const req = { method: 'GET', headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-${clientFlag}` } } as unknown as IncomingMessage;
  const traceparent = tracing!.startRequest(req).forwarding()!.traceparent;
  const [, id, , flags] = traceparent.split('-');
  return { traceId: id!, sampled: flags === '01' };
}

describe('sampling a request that continues a client trace', () => {
  it('is not decided by the trace id the client chose, nor by its flag', () => {
    tracing = startTracing(config(0.5), { routeOf: () => undefined });
    const keptOf = (traceId: string, flag: '00' | '01') => Array.from({ length: 200 }, () => forwarded(traceId, flag).sampled);
    // 200 draws at 0.5 each: all the same has a chance of 2^-199.
    for (const [id, flag] of [[ALWAYS_BY_ID, '00'], [NEVER_BY_ID, '01'], [ALWAYS_BY_ID, '01'], [NEVER_BY_ID, '00']] as const) {
      const kept = keptOf(id, flag);
      expect(kept, `${id} flagged ${flag}`).toContain(true);
      expect(kept, `${id} flagged ${flag}`).toContain(false);
    }
  });

  it("keeps the configured share by flowgate's own draw, and continues the client's trace id either way", () => {
    const draws = [0.05, 0.95, 0.09, 0.1, 0.5];
    let i = 0;
    tracing = startTracing(config(0.1), { routeOf: () => undefined, random: () => draws[i++ % draws.length]! });
    const seen = draws.map(() => forwarded(NEVER_BY_ID, '00'));
    expect(seen.map((s) => s.sampled)).toEqual([true, false, true, false, false]);
    expect(seen.every((s) => s.traceId === NEVER_BY_ID)).toBe(true);
    expect(forwarded(ALWAYS_BY_ID, '01')).toEqual({ traceId: ALWAYS_BY_ID, sampled: true });
    expect(forwarded(ALWAYS_BY_ID, '01')).toEqual({ traceId: ALWAYS_BY_ID, sampled: false });
  });

  it('keeps none at a ratio of 0 and all at 1, whatever the client asks', async () => {
    tracing = startTracing(config(0), { routeOf: () => undefined, random: () => 0 });
    expect(forwarded(ALWAYS_BY_ID, '01').sampled).toBe(false);
    await tracing.shutdown();
    tracing = startTracing(config(1), { routeOf: () => undefined, random: () => 0.999999 });
    expect(forwarded(NEVER_BY_ID, '00').sampled).toBe(true);
  });
});
