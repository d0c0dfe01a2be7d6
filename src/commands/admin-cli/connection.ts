import { shownUrl } from '../../shown-url.js';
import type { Connection } from './client.js';

export class UsageError extends Error {}

/** Flags every admin subcommand accepts, for node:util parseArgs. */
export const CONNECTION_OPTIONS = {
  url: { type: 'string' },
  username: { type: 'string' },
  password: { type: 'string' },
  'password-file': { type: 'string' },
  'allow-plain-http': { type: 'boolean' },
  workspace: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** A host whose traffic never leaves the machine: `localhost`, 127.0.0.0/8, ::1 (and ::ffff:127.x.y.z). */
function isLoopback(hostname: string): boolean {
  const host = hostname.toLowerCase();
  return host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '[::1]' || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(host);
}

/**
 * The flowgate to talk to: flags first, then MLFLOW_TRACKING_URI / _USERNAME / _PASSWORD (and
 * MLFLOW_WORKSPACE, as MLflow's client reads it). The password comes from `--password`, the file
 * `--password-file` names (`-`: stdin; one trailing newline dropped) or MLFLOW_TRACKING_PASSWORD. It is
 * sent over plain `http://` only to a loopback host or with `--allow-plain-http`: anyone on the path
 * would read an administrator's credentials.
 */
export async function connectionFrom(values: Record<string, unknown>, env: NodeJS.ProcessEnv, readFile: (path: string) => Promise<string>): Promise<Connection> {
  const url = (values.url as string | undefined) ?? env.MLFLOW_TRACKING_URI;
  const username = (values.username as string | undefined) ?? env.MLFLOW_TRACKING_USERNAME;
  const passwordFile = values['password-file'] as string | undefined;
  if (!url) throw new UsageError('no flowgate URL: set MLFLOW_TRACKING_URI or pass --url');
  if (!/^https?:\/\//.test(url)) throw new UsageError(`the flowgate URL must start with http:// or https:// (got '${shownUrl(url, 'something else')}')`);
  if (/^https?:\/\/[^/]*@/.test(url)) throw new UsageError('the flowgate URL must not carry a user name or password: set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD or pass --username/--password-file');
  if (values.password !== undefined && passwordFile !== undefined) throw new UsageError('pass --password or --password-file, not both');
  let password = values.password as string | undefined;
  if (passwordFile !== undefined) {
    try {
      password = (await readFile(passwordFile)).replace(/\r?\n$/, '');
    } catch (e) {
      throw new UsageError(`cannot read the password file ${passwordFile === '-' ? '(stdin)' : passwordFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
    if (password === '') throw new UsageError(`the password file ${passwordFile === '-' ? '(stdin)' : passwordFile} is empty`);
  }
  password ??= env.MLFLOW_TRACKING_PASSWORD;
  if (!username || !password)
    throw new UsageError('no credentials: set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD or pass --username and --password-file');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`the flowgate URL does not parse (got '${shownUrl(url, 'something else')}')`);
  }
  if (parsed.protocol === 'http:' && !isLoopback(parsed.hostname) && values['allow-plain-http'] !== true)
    throw new UsageError(
      `refusing to send ${username}'s password over plain http:// to ${parsed.host}, where anyone on the network path can read it: use https://, or pass --allow-plain-http if that network is trusted (plain http is accepted without it only for localhost, 127.0.0.0/8 and ::1)`,
    );
  const workspace = (values.workspace as string | undefined) ?? env.MLFLOW_WORKSPACE;
  return { url: url.replace(/\/+$/, ''), username, password, ...(workspace ? { workspace } : {}) };
}
