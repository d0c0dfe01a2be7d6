import type { Logger } from '../logging.js';
import type { MlflowConnection } from '../upstream/mlflow-connection.js';
import { probeMlflow } from '../upstream/mlflow-probe.js';

/** How much sooner than the probe's timeout a store check is given up: the answer, HTTP included, is out within it. */
const STORE_MARGIN_MS = 250;

/**
 * `reason` says what is wrong in a word a probe's log can show; it names no host or address, since
 * anyone may read `/readyz`. The details go to flowgate's log.
 */
export type Readiness = { ready: boolean; store: boolean; upstream: boolean; reason?: string };

/**
 * Readiness: the store accepts a write transaction within `timeoutMs` and MLflow accepts a call as flowgate sends it
 * (an API route, through the forwarding pool, so a MLflow that refuses flowgate's Host makes the
 * pod unready instead of every request failing behind a ready pod). Anyone may call `/readyz`, so
 * concurrent probes share one check and a result is reused for `maxAgeMs`: a flood of probes
 * cannot become a flood of write locks and MLflow requests.
 */
export interface ReadinessOptions {
  logger?: Logger;
  timeoutMs?: number;
  maxAgeMs?: number;
  /** Told the start of each answer MLflow gave the probe (`server-info`: whether it runs with workspaces). */
  onServerInfo?: (text: string) => void;
  /** False while the policy index may be missing another process's change (a re-read asked or failed). */
  indexFresh?: () => boolean;
}

export function createReadiness(
  storeReady: () => Promise<boolean>,
  mlflow: MlflowConnection,
  { logger, timeoutMs = 2000, maxAgeMs = 1000, onServerInfo, indexFresh = () => true }: ReadinessOptions = {},
) {  let storePending: Promise<boolean> | undefined;
  /**
   * A store that does not answer makes flowgate unready within `timeoutMs`, like MLflow. While one
   * check hangs no other starts: probes cannot pile statements onto a frozen server.
   */
  async function storeWritable(): Promise<boolean> {
    const pending = (storePending ??= storeReady()
      .catch(() => false)
      .finally(() => {
        storePending = undefined;
      }));
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), Math.max(timeoutMs - STORE_MARGIN_MS, timeoutMs / 2))));
    try {
      return await Promise.race([pending, late]);
    } finally {
      clearTimeout(timer);
    }
  }
  let lastReason: string | undefined;
  /** Logged when the answer changes, not on every probe. */
  function report(result: Readiness, detail: string | undefined): void {
    if (result.reason === lastReason) return;
    lastReason = result.reason;
    if (result.reason) logger?.warn({ reason: result.reason, detail }, 'flowgate is not ready');
    else logger?.info('flowgate is ready');
  }
  let inFlight: Promise<Readiness> | undefined;
  let last: { at: number; result: Readiness } | undefined;
  return function check(): Promise<Readiness> {
    if (last && Date.now() - last.at < maxAgeMs) return Promise.resolve(last.result);
    inFlight ??= (async () => {
      const [writable, answer] = await Promise.all([storeWritable(), probeMlflow(mlflow, timeoutMs)]);
      const upstream = answer.ok;
      if (answer.ok) onServerInfo?.(answer.text);
      // A replica whose index may lack a revoke made elsewhere must not be sent requests.
      const fresh = indexFresh();
      const store = writable && fresh;
      const reason = !writable ? 'store-not-writable' : !fresh ? 'policy-index-stale' : answer.ok ? undefined : answer.reason;
      const result: Readiness = { ready: store && upstream, store, upstream, ...(reason ? { reason } : {}) };
      report(result, answer.ok ? undefined : answer.detail);
      last = { at: Date.now(), result };
      return result;
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

export type ReadinessCheck = ReturnType<typeof createReadiness>;
