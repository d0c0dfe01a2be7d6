import type { Logger } from '../logging.js';
import { urlWithoutCredentials as shownUrl } from '../shown-url.js';
import { getText } from './get-text.js';
import type { MlflowConnection } from './mlflow-connection.js';
import { MAX_VERSION_BYTES, versionIn } from './mlflow-version.js';


/**
 * MLflow's version, read once before listening. An MLflow that does not answer does not stop the
 * start (it may come up after flowgate, and /readyz says not ready meanwhile), but the first thing
 * an operator sees is where flowgate looked and why it got nothing, instead of a version "unknown".
 */
export async function readMlflowVersionAtStart(
  mlflow: MlflowConnection,
  upstreamUrl: string,
  logger: Logger,
  timeoutMs = 2_000,
): Promise<string | undefined> {
  const answer = await getText(mlflow, '/version', timeoutMs, MAX_VERSION_BYTES + 1);
  if ('error' in answer) {
    const upstream = shownUrl(upstreamUrl);
    logger.warn({ upstream, cause: answer.error }, `MLflow is not reachable at ${upstream}: ${answer.error}`);
  }
  return versionIn(answer);
}
