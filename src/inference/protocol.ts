/**
 * What a model server will do with a path, as far as flowgate needs to know: which model it acts
 * on (for key scopes), whether it is a health probe, whether it is the server's own metrics.
 *
 * The path is judged as the model server reads it: percent-decoded once (uvicorn, and so KServe's
 * server and `mlflow models serve`, decode before routing), one trailing slash ignored (Starlette
 * redirects `/x/` to `/x`; other servers answer both). Only the paths listed below are recognised;
 * anything else is `unknown`, which a key limited to some models never opens, so a path flowgate
 * does not understand can never be charged to a model the key does open.
 *
 * KServe V1: /v1/models/<name>, POST /v1/models/<name>:predict|:explain
 * V2 / Open Inference Protocol: /v2, /v2/health/{live,ready},
 *   /v2/models/<name>[/versions/<v>][/ready|/infer|/generate|/generate_stream]
 * MLflow scoring server: /invocations, /ping, /health, /version
 */
export type ModelServerPath =
  /** Names a model: the scope check is against that model. */
  | { readonly kind: 'model'; readonly model: string; readonly health: boolean }
  /** Names none but acts on the server's one model or on no model: the route's `model` stands for it. */
  | { readonly kind: 'server'; readonly health: boolean }
  /** The server's Prometheus endpoint, in any spelling: never forwarded. */
  | { readonly kind: 'metrics' }
  | { readonly kind: 'unknown' };

const MODEL_FREE = new Set(['/invocations', '/ping', '/health', '/version', '/v2', '/v2/health/live', '/v2/health/ready']);
const MODEL_FREE_HEALTH = new Set(['/ping', '/health', '/v2/health/live', '/v2/health/ready']);
const V2_MODEL_ACTIONS = new Set(['ready', 'infer', 'generate', 'generate_stream']);
const V1_VERB = /^([^:]+):(predict|explain)$/;
/** Triton answers /v2/models/stats for every model at once, so no model may be called that. */
const V2_RESERVED_NAMES = new Set(['stats']);

const UNKNOWN: ModelServerPath = { kind: 'unknown' };

/**
 * `path` is the normalized upstream path (see request-path.ts: no dot segments, encoded slashes,
 * `;`, double encoding or malformed escapes). `mountedAt` is a route prefix that is forwarded
 * rather than stripped: a server mounted there would see its own /metrics below it.
 */
export function readModelServerPath(method: string | undefined, path: string, mountedAt?: string): ModelServerPath {
  const segments = decodedSegments(path);
  if (isMetrics(segments) || (mountedAt !== undefined && isMetrics(decodedSegments(path.slice(mountedAt.length) || '/'))))
    return { kind: 'metrics' };

  const read = method === 'GET' || method === 'HEAD';
  const canonical = `/${segments.join('/')}`;
  if (MODEL_FREE.has(canonical)) return { kind: 'server', health: read && MODEL_FREE_HEALTH.has(canonical) };

  const [version, models, name, ...rest] = segments;
  if (models !== 'models' || name === undefined || name === '') return UNKNOWN;
  if (version === 'v1') return rest.length === 0 ? v1Model(name, read) : UNKNOWN;
  if (version === 'v2') return v2Model(name, rest, read);
  return UNKNOWN;
}

/** Segments decoded once, without the empty one a trailing slash leaves. */
function decodedSegments(path: string): string[] {
  const segments = path.split('/').slice(1).map((s) => decodeURIComponent(s));
  if (segments.at(-1) === '') segments.pop();
  return segments;
}

/** Case-insensitive: some servers and ingresses fold case, and nothing legitimate is spelled /METRICS. */
function isMetrics(segments: readonly string[]): boolean {
  return segments[0]?.toLowerCase() === 'metrics';
}

/**
 * `<name>` alone is readiness/metadata (GET); `<name>:predict|explain` is inference (POST). Any other
 * colon (`:PREDICT`, `a:b:predict`) could split into a different name on another server: unknown.
 */
function v1Model(segment: string, read: boolean): ModelServerPath {
  if (!segment.includes(':')) return { kind: 'model', model: segment, health: read };
  const verb = V1_VERB.exec(segment);
  if (!verb || read) return UNKNOWN;
  return { kind: 'model', model: verb[1]!, health: false };
}

function v2Model(name: string, rest: readonly string[], read: boolean): ModelServerPath {
  if (V2_RESERVED_NAMES.has(name)) return UNKNOWN;
  let tail = rest;
  if (tail[0] === 'versions') {
    if (tail[1] === undefined || tail[1] === '') return UNKNOWN;
    tail = tail.slice(2);
  }
  if (tail.length === 0) return { kind: 'model', model: name, health: false };
  if (tail.length === 1 && V2_MODEL_ACTIONS.has(tail[0]!)) return { kind: 'model', model: name, health: read && tail[0] === 'ready' };
  return UNKNOWN;
}
