import { getText, type TextAnswer } from './get-text.js';
import type { MlflowConnection } from './mlflow-connection.js';

/** `/version` answers a few bytes of text; anything longer is not MLflow's version. */
export const MAX_VERSION_BYTES = 64;
const VERSION = /^\d+\.\d+(?:\.\d+)?\S*$/;

/**
 * Reads MLflow's `GET /version` (plain text, e.g. `3.17.2`): undefined when MLflow does not answer
 * in `timeoutMs`, answers another status, or answers something that is not a version.
 */
export async function readMlflowVersion(mlflow: MlflowConnection, timeoutMs = 2_000): Promise<string | undefined> {
  return versionIn(await getText(mlflow, '/version', timeoutMs, MAX_VERSION_BYTES + 1));
}

/** The version in an answer to `GET /version`, read with `MAX_VERSION_BYTES + 1` kept bytes. */
export function versionIn(answer: TextAnswer): string | undefined {
  if ('error' in answer || answer.status !== 200) return undefined;
  const version = answer.text.trim();
  return answer.text.length <= MAX_VERSION_BYTES && VERSION.test(version) ? version : undefined;
}
