import type { Dispatcher } from 'undici';
import type { MlflowConnection } from './mlflow-connection.js';

/** `/version` answers a few bytes of text; anything longer is not MLflow's version. */
const MAX_VERSION_BYTES = 64;
const VERSION = /^\d+\.\d+(?:\.\d+)?\S*$/;

/**
 * Reads MLflow's `GET /version` (plain text, e.g. `3.17.2`): undefined when MLflow does not answer
 * in `timeoutMs`, answers another status, or answers something that is not a version.
 */
export function readMlflowVersion(mlflow: MlflowConnection, timeoutMs = 2_000): Promise<string | undefined> {
  return new Promise((resolve) => {
    let status = 0;
    let text = '';
    let abort: ((err?: Error) => void) | undefined;
    const timer = setTimeout(() => abort?.(new Error('MLflow /version did not answer in time')), timeoutMs);
    timer.unref();
    const done = (version: string | undefined) => {
      clearTimeout(timer);
      resolve(version);
    };
    const handler: Dispatcher.DispatchHandler = {
      onConnect(a) {
        abort = a;
      },
      onHeaders(statusCode) {
        status = statusCode;
        return true;
      },
      onData(chunk: Buffer) {
        text += chunk.toString('utf8');
        if (text.length > MAX_VERSION_BYTES) abort?.(new Error('MLflow /version answer too long'));
        return true;
      },
      onComplete() {
        const version = text.trim();
        done(status === 200 && VERSION.test(version) ? version : undefined);
      },
      onError() {
        done(undefined);
      },
    };
    mlflow.pool.dispatch({ method: 'GET', path: `${mlflow.pathPrefix}/version`, headers: { host: mlflow.host } }, handler);
  });
}
