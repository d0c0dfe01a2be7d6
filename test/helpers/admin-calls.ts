import { adminAuth } from './flowgate.js';

/**
 * JSON calls to a running flowgate as the bootstrap admin (or `auth`), throwing with the answer on
 * anything but 2xx; `withTokens` creates people and keeps the token minted for each.
 */
export function jsonCaller(base: () => string) {
  const tokens: Record<string, string> = {};
  async function call(method: string, path: string, body?: unknown, auth = adminAuth()): Promise<Record<string, unknown>> {
    const r = await fetch(base() + path, {
      method,
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${method} ${path} → ${r.status} ${JSON.stringify(json)}`);
    return json;
  }
  return {
    call,
    tokens,
    basicOf: (username: string) => `Basic ${Buffer.from(`${username}:${tokens[username]}`).toString('base64')}`,
    async withTokens(usernames: readonly string[]): Promise<void> {
      for (const username of usernames) {
        await call('POST', '/api/2.0/mlflow/users/create', { username });
        tokens[username] = (await call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username })).token as string;
      }
    },
  };
}

/**
 * Calls as `who` ('admin' is the bootstrap admin, anyone else a user made by `withTokens`) in workspace
 * `ws` (no header when undefined): `send` answers whatever came back, `ok` throws on anything but
 * 2xx; `auditMark` is the newest audit entry's id, so an attempt that changes nothing leaves it
 * where it was.
 */
export function workspaceCaller(base: () => string) {
  const json = jsonCaller(base);
  const send = async (who: string, ws: string | undefined, method: string, path: string, body?: unknown) => {
    const headers = new Headers({ Authorization: who === 'admin' ? adminAuth() : json.basicOf(who), 'Content-Type': 'application/json' });
    if (ws !== undefined) headers.set('X-MLFLOW-WORKSPACE', ws);
    const r = await fetch(base() + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await r.text();
    return { status: r.status, text, json: (text === '' ? {} : JSON.parse(text)) as Record<string, any> };
  };
  const ok = async (who: string, ws: string | undefined, method: string, path: string, body?: unknown) => {
    const r = await send(who, ws, method, path, body);
    if (r.status >= 300) throw new Error(`${who} ${method} ${path} in ${ws} → ${r.status} ${r.text}`);
    return r.json;
  };
  const auditMark = async () => ((await ok('admin', undefined, 'GET', '/api/2.0/mlflow/permissions/audit?max_results=1')).entries as Array<{ id: number }>)[0]?.id ?? 0;
  return { ...json, send, ok, auditMark };
}
