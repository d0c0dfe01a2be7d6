import { request } from 'node:http';
import type { Db } from '../store/database.js';

type Readiness = { ready: boolean; store: boolean; upstream: boolean };

/**
 * Readiness: the store accepts a write transaction and MLflow answers `/health`. Anyone may call
 * `/readyz`, so concurrent probes share one check and a result is reused for `maxAgeMs`: a flood of
 * probes cannot become a flood of write locks and MLflow requests.
 */
export function createReadiness(db: Db, upstreamUrl: string, staticPrefix: string, timeoutMs = 2000, maxAgeMs = 1000) {
  const probe = db.prepare('SELECT 1');
  function storeWritable(): boolean {
    try {
      db.transaction(() => probe.get()).immediate();
      return true;
    } catch {
      return false;
    }
  }
  function upstreamHealthy(): Promise<boolean> {
    return new Promise((resolve) => {
      const r = request(`${upstreamUrl}${staticPrefix}/health`, { method: 'GET', timeout: timeoutMs }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      r.on('timeout', () => r.destroy());
      r.on('error', () => resolve(false));
      r.end();
    });
  }
  let inFlight: Promise<Readiness> | undefined;
  let last: { at: number; result: Readiness } | undefined;
  return function check(): Promise<Readiness> {
    if (last && Date.now() - last.at < maxAgeMs) return Promise.resolve(last.result);
    inFlight ??= (async () => {
      const store = storeWritable();
      const upstream = await upstreamHealthy();
      const result = { ready: store && upstream, store, upstream };
      last = { at: Date.now(), result };
      return result;
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
}

export type ReadinessCheck = ReturnType<typeof createReadiness>;
