import { request } from 'node:http';
import type { Db } from '../store/database.js';

/** Readiness: the store accepts a write transaction and MLflow answers `/health`. */
export function createReadiness(db: Db, upstreamUrl: string, staticPrefix: string, timeoutMs = 2000) {
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
  return async function check(): Promise<{ ready: boolean; store: boolean; upstream: boolean }> {
    const store = storeWritable();
    const upstream = await upstreamHealthy();
    return { ready: store && upstream, store, upstream };
  };
}

export type ReadinessCheck = ReturnType<typeof createReadiness>;
