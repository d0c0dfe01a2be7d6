import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { batchedCounter } from './batched-counter.js';
import { EVENT_LOOP_DELAY_GAUGES, eventLoopDelay, type EventLoopDelay } from './event-loop-delay.js';
import { preparedHistogram } from './prepared-histogram.js';
import type { AuthOutcome, Authenticator, CredentialLoader } from '../http/credentials.js';
import { KIND_SPECS, KINDS, type ResourceKind } from '../resources/kinds.js';
import type { Reason } from '../resources/reasons.js';
import type { ErrorCode } from '../errors.js';

/**
 * flowgate's instruments on one injected registry. Every label value comes from a bounded set:
 * route templates (catalog patterns, admin route paths), decision reasons and error codes defined in
 * code, cache names, status classes. Never a raw path, user name, token or resource id.
 */

/** would_deny: shadow mode (FLOWGATE_ENFORCE=false) forwarded a request the decision refused. */
export type DecisionLabel = 'allow' | 'deny' | 'would_deny';
export type ResourceTypeLabel = (typeof KINDS)[ResourceKind]['metricLabel'] | 'none' | 'admin';
/** The `reason` label: a decision reason or an error code, both closed sets (`none` when a decision had neither). */
export type ReasonLabel = Reason | ErrorCode | 'none';
export type AuthMethodLabel = 'basic' | 'bearer' | 'session' | 'none';
export type AuthResultLabel = 'success' | 'failure' | 'anonymous';

export interface DecisionRecord {
  readonly decision: DecisionLabel;
  /** The decision's reason (`group-grant`, `admin`, …), else the error code it failed with (`UNAUTHENTICATED`). */
  readonly reason: ReasonLabel;
  /** A resource kind, `none` or `admin`; labelled with the kind's metric label. */
  readonly resourceType: string;
  /** A route template, never a raw path. */
  readonly route: string;
}

export interface Metrics {
  readonly registry: Registry;
  /** Counts one authorization decision; `seconds` (when the decision was timed) feeds the histogram. */
  recordDecision(d: DecisionRecord, seconds?: number): void;
  authAttempt(method: AuthMethodLabel, result: AuthResultLabel): void;
  /** A hit/miss recorder for one named cache, bound once at start (cheap per call). */
  cache(name: string): (hit: boolean) => void;
  /** The same, for modules that report `(cacheName, hit)` (MLflow look-ups). */
  namedCache(name: string, hit: boolean): void;
  /** One upstream exchange: `status` 0 when no response came (connection failure, timeout). */
  upstream(route: string, status: number, seconds: number): void;
  readonly inFlight: { inc(): void; dec(): void };
  /** An after-hook that failed, leaving a change MLflow made unrecorded (a grant, a forgotten mapping): `hook` is its catalog name. */
  afterHookFailed(hook: string): void;
}

export interface MetricsOptions {
  readonly version: string;
  readonly registry?: Registry;
  /** Node process metrics (`process_*`, `nodejs_*`); on by default. */
  readonly defaultMetrics?: boolean;
  /** False in shadow mode; shown by the flowgate_enforcing gauge. */
  readonly enforcing?: boolean;
}

/** The `resource_type` label of each resource kind (and of decisions on none, or on the admin API). */
export const RESOURCE_TYPE_LABELS: ReadonlyMap<string, ResourceTypeLabel> = new Map<string, ResourceTypeLabel>([
  ...KIND_SPECS.map((k) => [k.kind, k.metricLabel as ResourceTypeLabel] as const),
  ['none', 'none'],
  ['admin', 'admin'],
]);
/**
 * prom-client's own event-loop delay sampler cannot be left out of its default metrics, and it never
 * sleeps: given an interval it never reaches, it never wakes. flowgate's (event-loop-delay.ts) fills its gauges.
 */
const NEVER_MS = 2 ** 31 - 1;
/** Reasons and routes are code-defined; anything else (a bug) is folded so it cannot explode cardinality. */
const REASON = /^[A-Za-z0-9_.-]{1,48}$/;
const ROUTE = /^[A-Za-z0-9_.:/{}<>*-]{1,200}$/;

/** Fine buckets from 1 µs: a warm decision is a few µs, one that waits on an MLflow look-up is ms. */
export const DECISION_BUCKETS = [
  1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5,
];
export const UPSTREAM_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export function statusClass(status: number): string {
  return status >= 100 && status < 600 ? `${Math.floor(status / 100)}xx` : 'error';
}

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = opts.registry ?? new Registry();
  const registers = [registry];
  // The per-request instruments, each on the one registry.
  const counter = <L extends string>(name: string, labelNames: readonly L[], help: string) => batchedCounter({ name, help, labelNames, registers });
  const histogram = <L extends string>(name: string, labelNames: readonly L[], buckets: readonly number[], help: string) =>
    preparedHistogram({ name, help, labelNames, buckets, registers });

  const decisions = counter(
    'flowgate_authz_decisions_total',
    ['decision', 'reason', 'resource_type', 'route'],
    'Authorization decisions on requests bound for MLflow and the admin API.',
  );
  const decisionSeconds = histogram(
    'flowgate_authz_decision_duration_seconds',
    ['decision'],
    DECISION_BUCKETS,
    'Time to reach an authorization decision: route match, resource resolution (look-ups included) and decide().',
  );
  const authn = counter(
    'flowgate_authn_attempts_total',
    ['method', 'result'],
    'Authentication attempts by credential kind and result; anonymous = no credentials offered.',
  );
  const upstreamSeconds = histogram(
    'flowgate_upstream_request_duration_seconds',
    ['route', 'status_class'],
    UPSTREAM_BUCKETS,
    "Time from forwarding a request to MLflow until its response headers arrive; status_class 'error' when none came.",
  );
  const inFlight = new Gauge({
    name: 'flowgate_http_requests_in_flight',
    help: 'Requests on the public listener that have not finished yet.',
    registers,
  });
  const caches = counter('flowgate_cache_requests_total', ['cache', 'result'], 'Cache look-ups by cache and result (hit or miss).');
  const hookFailures = counter(
    'flowgate_after_hook_failures_total',
    ['hook'],
    'After-hooks that failed after MLflow answered (a creator grant not written, a changed mapping not recorded for other flowgates): should stay 0.',
  );
  const build = new Gauge({
    name: 'flowgate_build_info',
    help: 'Always 1; the labels carry the flowgate version and the Node.js version.',
    labelNames: ['version', 'node'] as const,
    registers,
  });
  build.set({ version: opts.version, node: process.version }, 1);
  new Gauge({
    name: 'flowgate_enforcing',
    help: "1 when refusals are enforced; 0 in shadow mode (FLOWGATE_ENFORCE=false), where they are forwarded and counted as decision='would_deny'.",
    registers,
  }).set(opts.enforcing === false ? 0 : 1);
  let loopDelay: EventLoopDelay | undefined;
  if (opts.defaultMetrics !== false) {
    collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: NEVER_MS });
    // Gauges named `_total` fail `promtool check metrics`; the per-type gauges (`nodejs_active_handles`, …) stay.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'])
      registry.removeSingleMetric(name);
    for (const name of Object.keys(EVENT_LOOP_DELAY_GAUGES)) registry.removeSingleMetric(name);
    loopDelay = eventLoopDelay(registers);
  }

  // Prepared series: the hot path bumps a number instead of hashing labels.
  const cacheRecorders = new Map<string, (hit: boolean) => void>();
  function cache(name: string): (hit: boolean) => void {
    let recorder = cacheRecorders.get(name);
    if (!recorder) {
      const hit = caches.series({ cache: name, result: 'hit' });
      const miss = caches.series({ cache: name, result: 'miss' });
      recorder = (h) => (h ? hit() : miss());
      cacheRecorders.set(name, recorder);
    }
    return recorder;
  }

  // Label sets are bounded (route templates, reasons), so bound children are memoized by their raw
  // values: the hot path does one map look-up instead of validating and hashing labels.
  const decisionChildren = new Map<string, { count: () => void; time: (s: number) => void }>();
  const upstreamChildren = new Map<string, (s: number) => void>();
  const authChildren = new Map<string, () => void>();

  return {
    registry,
    recordDecision(d, seconds) {
      const key = `${d.decision}\u0000${d.reason}\u0000${d.resourceType}\u0000${d.route}`;
      let child = decisionChildren.get(key);
      if (!child) {
        const count = decisions.series({
          decision: d.decision,
          reason: REASON.test(d.reason) ? d.reason : 'other',
          resource_type: RESOURCE_TYPE_LABELS.get(d.resourceType) ?? 'none',
          route: ROUTE.test(d.route) ? d.route : 'other',
        });
        child = { count, time: decisionSeconds.series({ decision: d.decision }) };
        decisionChildren.set(key, child);
      }
      child.count();
      if (seconds !== undefined) child.time(seconds);
    },
    authAttempt(method, result) {
      const key = `${method}\u0000${result}`;
      let inc = authChildren.get(key);
      if (!inc) {
        inc = authn.series({ method, result });
        authChildren.set(key, inc);
      }
      inc();
    },
    cache,
    namedCache(name, hit) {
      cache(name)(hit);
    },
    upstream(route, status, seconds) {
      const cls = statusClass(status);
      const key = `${route}\u0000${cls}`;
      let observe = upstreamChildren.get(key);
      if (!observe) {
        observe = upstreamSeconds.series({ route: ROUTE.test(route) ? route : 'other', status_class: cls });
        upstreamChildren.set(key, observe);
      }
      observe(seconds);
    },
    inFlight: {
      inc: () => {
        loopDelay?.requestStarted();
        inFlight.inc();
      },
      dec: () => {
        loopDelay?.requestEnded();
        inFlight.dec();
      },
    },
    afterHookFailed(hook) {
      hookFailures.series({ hook: REASON.test(hook) ? hook : 'other' })();
    },
  };
}

/**
 * Wraps a credential loader so each attempt of its kind is counted: a principal = success, a thrown
 * error = failure, `undefined` = this kind of credential was not offered (not counted). A synchronous
 * loader stays synchronous.
 */
export function countedLoader(method: Exclude<AuthMethodLabel, 'none'>, load: CredentialLoader, metrics: Metrics): CredentialLoader {
  const failed = (e: unknown): never => {
    metrics.authAttempt(method, 'failure');
    throw e;
  };
  const settled = <P>(principal: P): P => {
    if (principal) metrics.authAttempt(method, 'success');
    return principal;
  };
  return (req) => {
    let out: ReturnType<CredentialLoader>;
    try {
      out = load(req);
    } catch (e) {
      return failed(e);
    }
    return out instanceof Promise ? out.then(settled, failed) : settled(out);
  };
}

/** Counts requests that reached authentication without offering any credential. */
export function countedAuthenticator(authenticate: Authenticator, metrics: Metrics): Authenticator {
  const counted = (outcome: AuthOutcome): AuthOutcome => {
    if (outcome.method === 'none') metrics.authAttempt('none', 'anonymous');
    return outcome;
  };
  return (req) => {
    const outcome = authenticate(req);
    return outcome instanceof Promise ? outcome.then(counted) : counted(outcome);
  };
}
