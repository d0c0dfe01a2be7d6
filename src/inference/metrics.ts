import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * Every value of the `result` label. Rejections are split by cause so an operator can tell clients
 * without keys from clients with stale keys; out-of-scope keys count as wrong keys.
 */
export type InferenceResult =
  | 'allowed'
  | 'health'
  | 'missing_key'
  | 'wrong_key'
  | 'bad_request'
  | 'not_found'
  | 'upstream_error';

export interface InferenceMetrics {
  record(route: string, result: InferenceResult, seconds: number): void;
}

const REQUESTS = 'flowgate_inference_requests_total';
const DURATION = 'flowgate_inference_request_duration_seconds';

/**
 * Labels come from bounded sets only: route names from the config and the result union above.
 * Reuses instruments already registered, so a gateway rebuilt against the same registry works.
 */
export function createInferenceMetrics(registry: Registry): InferenceMetrics {
  const requests =
    (registry.getSingleMetric(REQUESTS) as Counter<'route' | 'result'> | undefined) ??
    new Counter({
      name: REQUESTS,
      help: 'Requests on inference routes, by route and outcome of the x-api-key check.',
      labelNames: ['route', 'result'] as const,
      registers: [registry],
    });
  const duration =
    (registry.getSingleMetric(DURATION) as Histogram<'route'> | undefined) ??
    new Histogram({
      name: DURATION,
      help: 'Time from request to the end of the response on inference routes.',
      labelNames: ['route'] as const,
      // Inference spans from sub-10 ms health checks to minutes-long generation streams.
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    });
  return {
    record(route, result, seconds) {
      requests.inc({ route, result });
      duration.observe({ route }, seconds);
    },
  };
}
