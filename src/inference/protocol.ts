/**
 * What flowgate needs to know about model-server paths: which model a request names (for key
 * scopes), which paths are health probes, and which are the server's own metrics. Paths are those
 * the model server sees (after any prefix strip) and are passed on unchanged.
 *
 * KServe V1: /v1/models/<name>[:predict|:explain]
 * V2 / Open Inference Protocol: /v2/models/<name>[/versions/<v>][/infer|/ready], /v2/health/{live,ready}
 * MLflow scoring server: /invocations, /ping, /health, /version
 */

const V1_MODEL = /^\/v1\/models\/([^/:]+)(?::[a-z]+)?$/;
const V2_MODEL = /^\/v2\/models\/([^/]+)(?:\/versions\/[^/]+)?(?:\/(infer|ready|generate|generate_stream))?$/;

/** The model named by the path, decoded; undefined for paths that name none (e.g. /invocations). */
export function modelInPath(path: string): string | undefined {
  const m = V1_MODEL.exec(path) ?? V2_MODEL.exec(path);
  if (!m?.[1]) return undefined;
  return decodeURIComponent(m[1]);
}

const HEALTH_EXACT = new Set(['/ping', '/health', '/v2/health/live', '/v2/health/ready']);
const V2_MODEL_READY = /^\/v2\/models\/[^/]+(?:\/versions\/[^/]+)?\/ready$/;
/** KServe V1 answers model readiness on the bare model path. */
const V1_MODEL_READY = /^\/v1\/models\/[^/:]+$/;

export function isHealthProbe(method: string | undefined, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return HEALTH_EXACT.has(path) || V2_MODEL_READY.test(path) || V1_MODEL_READY.test(path);
}

/** The model server's Prometheus endpoint stays private to the cluster. */
export function isModelServerMetrics(path: string): boolean {
  return path === '/metrics' || path.startsWith('/metrics/');
}
