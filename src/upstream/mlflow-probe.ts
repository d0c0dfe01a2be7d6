import { getText } from './get-text.js';
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
  /** `text`: the start of MLflow's answer (its feature flags are in the first bytes). */
  | { readonly ok: true; readonly text: string }
  | { readonly ok: false; readonly reason: 'mlflow-unreachable' | 'mlflow-refuses-host' | 'mlflow-error'; readonly status: number; readonly detail: string };

/**
 * Calls MLflow's probe route over the pool forwarded calls use, with the headers they carry, so
 * that it fails exactly when MLflow would refuse the calls flowgate forwards.
 */
export async function probeMlflow(mlflow: MlflowConnection, timeoutMs: number): Promise<ProbeResult> {
  const answer = await getText(mlflow, PROBE_PATH, timeoutMs, KEPT_BYTES);
  if ('error' in answer) return { ok: false, reason: 'mlflow-unreachable', status: 0, detail: `MLflow did not answer ${PROBE_PATH}: ${answer.error}` };
  const { status, text } = answer;
  if (status >= 200 && status < 300) return { ok: true, text };
  const refused = status === 403 && text.includes(INVALID_HOST);
  return {
    ok: false,
    reason: refused ? 'mlflow-refuses-host' : 'mlflow-error',
    status,
    detail: refused
      ? `MLflow refuses the Host header ${JSON.stringify(mlflow.host)}: add it to mlflow server --allowed-hosts`
      : `MLflow answered ${PROBE_PATH} with HTTP ${status}`,
  };
}
