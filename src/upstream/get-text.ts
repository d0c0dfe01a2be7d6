import type { Dispatcher } from 'undici';
import type { MlflowConnection } from './mlflow-connection.js';

/** MLflow's status and the first `keepBytes` of its answer, or why there is none. */
export type TextAnswer = { readonly status: number; readonly text: string } | { readonly error: string };

/**
 * A small GET to MLflow over the pool forwarded calls use, with the Host they carry: for the checks
 * that must fail exactly when MLflow would refuse flowgate (readiness, the version read). Settles
 * within `timeoutMs` even while the connection is still being made.
 */
export function getText(mlflow: MlflowConnection, path: string, timeoutMs: number, keepBytes: number): Promise<TextAnswer> {
  return new Promise((resolve) => {
    let status = 0;
    let text = '';
    let abort: ((err?: Error) => void) | undefined;
    let settled = false;
    const done = (answer: TextAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const timer = setTimeout(() => {
      const error = `no answer within ${timeoutMs} ms`;
      abort?.(new Error(error));
      done({ error });
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
        if (text.length < keepBytes) text += chunk.toString('utf8', 0, keepBytes - text.length);
        return true;
      },
      onComplete() {
        done({ status, text });
      },
      onError(err) {
        done({ error: err.message });
      },
    };
    mlflow.pool.dispatch({ method: 'GET', path: `${mlflow.pathPrefix}${path}`, headers: { host: mlflow.host } }, handler);
  });
}
