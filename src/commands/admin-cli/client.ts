import { shownUrl } from '../../shown-url.js';
/** An admin-API answer other than 2xx, carrying MLflow's error message. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: string,
    message: string,
  ) {
    super(message);
  }
}

export interface Connection {
  /** The tracking URI (flowgate's URL, base path included), without a trailing slash. */
  readonly url: string;
  readonly username: string;
  readonly password: string;
  /** The MLflow workspace grants are read and made in (`X-MLFLOW-WORKSPACE`); the default one without. */
  readonly workspace?: string;
}

export interface AdminClient {
  /** The flowgate this client talks to (its tracking URI, no trailing slash). */
  readonly url: string;
  /** The MLflow workspace its calls act in; undefined: the connection's (the default one without). */
  readonly workspace?: string;
  /** `path` is relative to `/api/2.0/mlflow/`, e.g. `permissions/users`. */
  call<T = Record<string, unknown>>(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<T>;
  /** The same client, acting in another MLflow workspace. */
  inWorkspace(workspace: string): AdminClient;
  /** MLflow's workspaces the caller sees (none when MLflow runs without workspaces). */
  workspaces(): Promise<string[]>;
}

/** Talks to a running flowgate over HTTP with Basic credentials; never prints the password. */
export function createAdminClient(conn: Connection, fetchImpl: typeof fetch = fetch): AdminClient {
  const auth = `Basic ${Buffer.from(`${conn.username}:${conn.password}`).toString('base64')}`;
  async function request<T>(method: string, url: string, what: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { Authorization: auth, Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (conn.workspace !== undefined) headers['X-MLFLOW-WORKSPACE'] = conn.workspace;
    let res: Response;
    try {
      res = await fetchImpl(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (e) {
      // The cause's message may quote the URL, credentials in it included: shown only when it does not.
      const cause = (e as Error).cause instanceof Error ? ((e as Error).cause as Error).message : (e as Error).message;
      throw new ApiError(0, 'UNREACHABLE', `cannot reach ${shownUrl(conn.url)}: ${cause.includes(conn.url) || /:\/\/[^/\s]*@/.test(cause) ? 'the URL carries credentials or is not valid' : cause}`);
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? {} : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const err = (json ?? {}) as { error_code?: string; message?: string };
      throw new ApiError(res.status, err.error_code ?? `HTTP_${res.status}`, err.message ?? (text.slice(0, 200) || res.statusText));
    }
    if (json === undefined) throw new ApiError(res.status, 'BAD_RESPONSE', `${method} ${what} did not answer JSON`);
    return json as T;
  }
  return {
    url: conn.url,
    ...(conn.workspace !== undefined ? { workspace: conn.workspace } : {}),
    call: <T>(method: string, path: string, body?: unknown): Promise<T> => request<T>(method, `${conn.url}/api/2.0/mlflow/${path}`, path, body),
    inWorkspace: (workspace) => createAdminClient({ ...conn, workspace }, fetchImpl),
    async workspaces() {
      // MLflow says whether it runs with workspaces (3.11+); without them, or before, there are none to list.
      let info: { workspaces_enabled?: unknown };
      try {
        info = await request<{ workspaces_enabled?: unknown }>('GET', `${conn.url}/api/3.0/mlflow/server-info`, 'server-info');
      } catch (e) {
        if (e instanceof ApiError && e.status >= 400 && e.status < 500) return [];
        throw e;
      }
      if (info.workspaces_enabled !== true) return [];
      const answer = await request<{ workspaces?: Array<{ name?: unknown }> }>('GET', `${conn.url}/api/3.0/mlflow/workspaces`, 'workspaces');
      return (answer.workspaces ?? []).flatMap((w) => (typeof w.name === 'string' ? [w.name] : []));
    },
  };
}

/** `segment` escaped for a path (names may hold `/` or spaces). */
export const seg = (segment: string) => encodeURIComponent(segment);
