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
