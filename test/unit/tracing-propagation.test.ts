import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { incomingContext, outgoingHeaders } from '../../src/tracing/incoming-context.js';

/** What flowgate takes from a client's Trace Context headers: a well-formed parent, else nothing. */
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const SPAN = '00f067aa0ba902b7';
const parentOf = (headers: Record<string, string | string[]>) => trace.getSpanContext(incomingContext(headers));

describe('the incoming trace context', () => {
  it('continues a well-formed traceparent and keeps valid tracestate members', () => {
    const parent = parentOf({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'a=1,b=2' });
    expect(parent).toMatchObject({ traceId: TRACE, spanId: SPAN, traceFlags: 1, isRemote: true });
    expect(parent?.traceState?.serialize()).toBe('a=1,b=2');
  });

  it.each([
    ['all-zero trace id', `00-${'0'.repeat(32)}-${SPAN}-01`],
    ['all-zero span id', `00-${TRACE}-${'0'.repeat(16)}-01`],
    ['version ff', `ff-${TRACE}-${SPAN}-01`],
    ['upper-case hex', `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ['short trace id', `00-${TRACE.slice(2)}-${SPAN}-01`],
    ['version 00 with more fields', `00-${TRACE}-${SPAN}-01-extra`],
    ['not hex', `00-${'z'.repeat(32)}-${SPAN}-01`],
    ['two headers joined', `00-${TRACE}-${SPAN}-01, 00-${TRACE}-${SPAN}-01`],
    ['far too long', `01-${TRACE}-${SPAN}-01-${'a'.repeat(10_000)}`],
  ])('ignores a traceparent with %s', (_, traceparent) => {
    expect(parentOf({ traceparent, tracestate: 'a=1' })).toBeUndefined();
  });

  it('ignores a traceparent sent as several values', () => {
    expect(parentOf({ traceparent: [`00-${TRACE}-${SPAN}-01`, `00-${TRACE}-${SPAN}-00`] })).toBeUndefined();
  });

  it('drops an oversized tracestate whole, and invalid or surplus members of a bounded one', () => {
    expect(parentOf({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: `a=${'x'.repeat(5000)}` })?.traceState).toBeUndefined();
    const members = Array.from({ length: 40 }, (_, i) => `k${i}=v`).join(',');
    const kept = parentOf({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: `${members},BAD KEY=1,x=\u0001` })?.traceState?.serialize() ?? '';
    expect(kept.split(',')).toHaveLength(32);
    expect(kept).not.toContain('BAD');
    expect(kept.length).toBeLessThanOrEqual(512);
  });

  it('writes a parent for MLflow from a context, and nothing without one', () => {
    const context = incomingContext({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'a=1' });
    expect(outgoingHeaders(context)).toEqual({ traceparent: `00-${TRACE}-${SPAN}-01`, tracestate: 'a=1' });
    expect(outgoingHeaders(incomingContext({}))).toBeUndefined();
  });
});
