import type { Dispatcher } from 'undici';
import type { MlflowConnection } from './mlflow-connection.js';

/**
 * An API route MLflow answers cheaply, without a Flask worker, and behind the same Host and CORS
 * guards as every other API route (`/health` and `/version` are exempt from the Host check, so a
 * MLflow refusing every real call still answers them).
 */
export const PROBE_PATH = '/api/3.0/mlflow/server-info';

/** MLflow's answer to a request whose Host is outside `--allowed-hosts` (mlflow/server/security_utils.py). */
const INVALID_HOST = 'Invalid Host header';

/** Enough of an answer to recognise MLflow's refusal; the rest is read and dropped. */
const KEPT_BYTES = 256;

export type ProbeResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: 'mlflow-unreachable' | 'mlflow-refuses-host' | 'mlflow-error'; readonly status: number; readonly detail: string };

/**
 * Calls MLflow's probe route over the pool forwarded calls use, with the headers they carry, so
 * that it fails exactly when MLflow would refuse the calls flowgate forwards.
 */
export function probeMlflow(mlflow: MlflowConnection, timeoutMs: number): Promise<ProbeResult> {
  return new Promise((resolve) => {
    let status = 0;
    let text = '';
    let abort: ((err?: Error) => void) | undefined;
    let settled = false;
    const done = (result: ProbeResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(result);
    };
    // Settles even while the connection is still being made (no abort handed over yet).
    const timer = setTimeout(() => {
      const err = new Error(`no answer within ${timeoutMs} ms`);
      abort?.(err);
      done({ ok: false, reason: 'mlflow-unreachable', status: 0, detail: `MLflow did not answer ${PROBE_PATH}: ${err.message}` });
    }, timeoutMs);
    timer.unref();
    const handler: Dispatcher.DispatchHandler = {
      onConnect(a) {
        abort = a;
      },
      onHeaders(statusCode) {
        status = statusCode;
        return true;
      },
      onData(chunk: Buffer) {
        if (text.length < KEPT_BYTES) text += chunk.toString('utf8', 0, KEPT_BYTES);
        return true;
      },
      onComplete() {
        if (status >= 200 && status < 300) return done({ ok: true });
        const refused = status === 403 && text.includes(INVALID_HOST);
        done({
          ok: false,
          reason: refused ? 'mlflow-refuses-host' : 'mlflow-error',
          status,
          detail: refused
            ? `MLflow refuses the Host header ${JSON.stringify(mlflow.host)}: add it to mlflow server --allowed-hosts`
            : `MLflow answered ${PROBE_PATH} with HTTP ${status}`,
        });
      },
      onError(err) {
        done({ ok: false, reason: 'mlflow-unreachable', status: 0, detail: `MLflow did not answer ${PROBE_PATH}: ${err.message}` });
      },
    };
    mlflow.pool.dispatch({ method: 'GET', path: `${mlflow.pathPrefix}${PROBE_PATH}`, headers: { host: mlflow.host } }, handler);
  });
}
