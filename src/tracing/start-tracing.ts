import { AsyncLocalStorage } from 'node:async_hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { TracingConfig } from '../config.js';
import { VERSION } from '../version.js';
import { incomingContext } from './incoming-context.js';
import { shutdownWithin } from './bounded-shutdown.js';
import { RandomRatioSampler } from './random-ratio-sampler.js';
import { OpenRequestTrace, type ActiveStage } from './request-trace.js';
import { serviceResource } from './service-resource.js';
import type { Tracing } from './types.js';

export interface TracingDeps {
  /** The catalog's template of a path flowgate calls on MLflow (`unmatched` when none): look-up spans are named by it, never by the path. */
  readonly routeOf: (method: string, path: string) => string | undefined;
  /** The draw deciding whether a request continuing a client's trace is kept, in [0, 1); tests pass their own. */
  readonly random?: () => number;
}

/**
 * The tracer of one flowgate: its own provider (nothing registered globally, so several flowgates in
 * one process, as in the tests, keep their spans apart), batching spans to an OTLP/HTTP endpoint.
 *
 * Sampling: a request without a parent is kept at the configured ratio (by the trace id flowgate
 * draws). A client's `traceparent` is continued (same trace id, so MLflow's spans join the client's
 * trace), but neither its sampled flag nor its trace id decides: a fresh random draw at the same ratio
 * does, so a client can neither force every request into the traces nor hide its own (the trace id is
 * the client's choice, and a ratio applied to it would let the client pick).
 */
export function startTracing(config: TracingConfig, deps: TracingDeps): Tracing {
  const remote = new RandomRatioSampler(config.sampleRatio, deps.random);
  const provider = new TracerProvider({
    resource: serviceResource(config.serviceName),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sampleRatio), remoteParentSampled: remote, remoteParentNotSampled: remote }),
    spanLimits: { attributeValueLengthLimit: 256, attributeCountLimit: 32, eventCountLimit: 8 },
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url: config.endpoint, timeoutMillis: 10_000 }) })],
  });
  const tracer = provider.getTracer('flowgate', VERSION);
  const active = new AsyncLocalStorage<ActiveStage>();
  return {
    startRequest: (req) => new OpenRequestTrace(tracer, active, incomingContext(req.headers), req.method ?? 'GET'),
    call(method, path) {
      const running = active.getStore();
      if (running === undefined) return undefined;
      return running.owner.call(method, deps.routeOf(method, path) ?? 'unmatched', running.context);
    },
    shutdown: () => shutdownWithin(() => provider.shutdown()),
  };
}
