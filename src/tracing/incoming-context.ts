import type { IncomingHttpHeaders } from 'node:http';
import { ROOT_CONTEXT, type Context, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { TraceHeaders } from './types.js';

/**
 * A `traceparent` of version 00 is 55 characters; later versions may append fields, so some room is
 * left, but a header far beyond any version is noise (or an attack) and is not parsed at all.
 */
const MAX_TRACEPARENT = 256;
/**
 * The propagator keeps at most 512 characters and 32 valid members of a `tracestate` and drops the
 * rest; a header far longer than that is dropped whole, so it costs no split over a huge string.
 */
const MAX_TRACESTATE = 1024;

const propagator = new W3CTraceContextPropagator();

/** Reads only the two headers, and only single, bounded string values (a repeated header arrives joined and fails the format). */
const boundedHeaders: TextMapGetter<IncomingHttpHeaders> = {
  keys: () => ['traceparent', 'tracestate'],
  get(headers, key) {
    const value = headers[key];
    if (typeof value !== 'string') return undefined;
    if (key === 'traceparent') return value.length <= MAX_TRACEPARENT ? value : undefined;
    return value.length <= MAX_TRACESTATE ? value : undefined;
  },
};

/**
 * The remote parent a client named, when its `traceparent` is well-formed (the propagator's W3C
 * check: hex ids, not all zeros, known version layout); otherwise a fresh trace. A `tracestate`
 * without a valid `traceparent` is ignored, as the W3C spec asks.
 */
export function incomingContext(headers: IncomingHttpHeaders): Context {
  return propagator.extract(ROOT_CONTEXT, headers, boundedHeaders);
}

interface Written {
  traceparent?: string;
  tracestate?: string;
}

const intoObject: TextMapSetter<Written> = {
  set(carrier, key, value) {
    if (key === 'traceparent') carrier.traceparent = value;
    else if (key === 'tracestate') carrier.tracestate = value;
  },
};

/** The headers naming `context`'s span as the parent of what MLflow does for this call. */
export function outgoingHeaders(context: Context): TraceHeaders | undefined {
  const written: Written = {};
  propagator.inject(context, written, intoObject);
  if (written.traceparent === undefined) return undefined;
  return written.tracestate ? { traceparent: written.traceparent, tracestate: written.tracestate } : { traceparent: written.traceparent };
}
