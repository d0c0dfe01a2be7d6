import { shownUrl } from '../../shown-url.js';
import type { Connection } from './client.js';

export class UsageError extends Error {}

/** Flags every admin subcommand accepts, for node:util parseArgs. */
export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  username: { type: 'string' },
  password: { type: 'string' },
  workspace: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** The flowgate to talk to: flags first, then MLFLOW_TRACKING_URI / _USERNAME / _PASSWORD (and MLFLOW_WORKSPACE, as MLflow's client reads it). */
export function connectionFrom(values: Record<string, unknown>, env: NodeJS.ProcessEnv): Connection {
  const url = (values.url as string | undefined) ?? env.MLFLOW_TRACKING_URI;
  const username = (values.username as string | undefined) ?? env.MLFLOW_TRACKING_USERNAME;
  const password = (values.password as string | undefined) ?? env.MLFLOW_TRACKING_PASSWORD;
  if (!url) throw new UsageError('no flowgate URL: set MLFLOW_TRACKING_URI or pass --url');
  if (!/^https?:\/\//.test(url)) throw new UsageError(`the flowgate URL must start with http:// or https:// (got '${shownUrl(url, 'something else')}')`);
  if (/^https?:\/\/[^/]*@/.test(url)) throw new UsageError('the flowgate URL must not carry a user name or password: set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD or pass --username/--password');
  if (!username || !password)
    throw new UsageError('no credentials: set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD or pass --username/--password');
  const workspace = (values.workspace as string | undefined) ?? env.MLFLOW_WORKSPACE;
  return { url: url.replace(/\/+$/, ''), username, password, ...(workspace ? { workspace } : {}) };
}
