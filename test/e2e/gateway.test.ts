import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * Issue 35, the AI gateway: the real MLflow (pinned) with its gateway routed to a fake
 * OpenAI-compatible provider on loopback. Secrets, model definitions and endpoints are kinds of
 * their own, keyed by name as mlflow-oidc-auth keys them; USE sits between READ and EDIT.
 */
const SECRET_VALUE = 'sk-never-shown-0123456789';
const GW = '/api/3.0/mlflow/gateway';

describe('the AI gateway behind flowgate', () => {
  let mlflow: MlflowServer;
  let provider: Awaited<ReturnType<typeof startStubUpstream>>;
  let fg: TestFlowgate;
  const { call, basicOf, withTokens } = jsonCaller(() => fg.url);
  const ids: Record<string, string> = {};

  const as = (who: string | undefined, method: string, path: string, body?: unknown) =>
    fetch(fg.url + path, {
      method,
      headers: { ...(who ? { Authorization: basicOf(who) } : {}), 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const chat = (who: string, endpoint: string) =>
    as(who, 'POST', `/gateway/${encodeURIComponent(endpoint)}/mlflow/invocations`, { messages: [{ role: 'user', content: 'ping' }] });
  const chatByBody = (who: string, endpoint: unknown, path = '/gateway/mlflow/v1/chat/completions') =>
    as(who, 'POST', path, { model: endpoint, messages: [{ role: 'user', content: 'ping' }] });
  const grant = (username: string, segment: string, name: string, permission: string, auth?: string) =>
    call('POST', `/api/2.0/mlflow/permissions/users/${username}/gateways/${segment}/${encodeURIComponent(name)}`, { permission }, auth);
  const listNames = async (who: string, what: 'endpoints' | 'secrets' | 'model-definitions') => {
    const r = await as(who, 'GET', `${GW}/${what}/list`);
    expect(r.status).toBe(200);
    const json = (await r.json()) as Record<string, Array<{ name?: string; secret_name?: string }>>;
    const key = what === 'model-definitions' ? 'model_definitions' : what;
    return (json[key] ?? []).map((e) => e.name ?? e.secret_name).sort();
  };

  beforeAll(async () => {
    provider = await startStubUpstream((req) => ({
      status: 200,
      body: {
        id: 'c1',
        object: 'chat.completion',
        created: 1,
        model: JSON.parse(req.body || '{}').model ?? 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'pong' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      },
    }));
    mlflow = await startMlflowServer({
      env: { MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES: 'http,https', MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS: 'true' },
    });
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
    await withTokens(['ann', 'bob', 'cat']);
    // The administrator keeps the provider key; ann may build on it.
    const secret = await call('POST', `${GW}/secrets/create`, {
      secret_name: 'team-key',
      secret_value: { api_key: SECRET_VALUE },
      provider: 'openai',
      auth_config: { api_base: `${provider.url}/v1` },
    });
    ids.secret = (secret.secret as { secret_id: string }).secret_id;
    await grant('ann', 'secrets', 'team-key', 'USE');
    const adminDef = await call('POST', `${GW}/model-definitions/create`, { name: 'admin-def', secret_id: ids.secret, provider: 'openai', model_name: 'gpt-4o' });
    ids.adminDef = (adminDef.model_definition as { model_definition_id: string }).model_definition_id;
    await call('POST', `${GW}/endpoints/create`, {
      name: 'admin-chat',
      model_configs: [{ model_definition_id: ids.adminDef, linkage_type: 'PRIMARY', weight: 1 }],
    });
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
    await provider?.close();
  });

  it('a model definition needs USE on its secret, and its creator manages it', async () => {
    const body = { name: 'ann-def', secret_id: ids.secret, provider: 'openai', model_name: 'gpt-4o' };
    expect((await as('cat', 'POST', `${GW}/model-definitions/create`, { ...body, name: 'cat-def' })).status).toBe(403);
    const created = await as('ann', 'POST', `${GW}/model-definitions/create`, body);
    expect(created.status).toBe(200);
    ids.annDef = ((await created.json()) as { model_definition: { model_definition_id: string } }).model_definition.model_definition_id;
    const grants = await call('GET', `/api/2.0/mlflow/permissions/users/ann/gateways/model-definitions/ann-def`);
    expect(JSON.stringify(grants)).toContain('MANAGE');
  });

  it('an endpoint needs USE on every model definition it routes to', async () => {
    const routed = (defs: string[]) => defs.map((d) => ({ model_definition_id: d, linkage_type: 'PRIMARY', weight: 1 }));
    expect((await as('ann', 'POST', `${GW}/endpoints/create`, { name: 'ann-mixed', model_configs: routed([ids.annDef!, ids.adminDef!]) })).status).toBe(403);
    expect((await as('cat', 'POST', `${GW}/endpoints/create`, { name: 'cat-chat', model_configs: routed([ids.annDef!]) })).status).toBe(403);
    const created = await as('ann', 'POST', `${GW}/endpoints/create`, { name: 'ann-chat', model_configs: routed([ids.annDef!]) });
    expect(created.status).toBe(200);
    ids.annChat = ((await created.json()) as { endpoint: { endpoint_id: string } }).endpoint.endpoint_id;
  });

  it('invoking an endpoint needs USE on it, by its URL and by the body\'s model', async () => {
    // ann manages her endpoint and shares it with bob at USE.
    await grant('bob', 'endpoints', 'ann-chat', 'USE', basicOf('ann'));
    for (const r of [await chat('bob', 'ann-chat'), await chatByBody('bob', 'ann-chat'), await chatByBody('bob', 'ann-chat', '/gateway/openai/v1/chat/completions')]) {
      expect(r.status).toBe(200);
      expect(JSON.stringify(await r.json())).toContain('pong');
    }
    for (const r of [
      await chat('bob', 'admin-chat'),
      await chatByBody('bob', 'admin-chat'),
      await chat('cat', 'ann-chat'),
      await chatByBody('cat', 'ann-chat'),
      await chatByBody('cat', 'ann-chat', '/gateway/openai/v1/chat/completions'),
    ]) {
      expect(r.status).toBe(403);
      expect(((await r.json()) as { error_code: string }).error_code).toBe('PERMISSION_DENIED');
    }
  });

  it('a body naming no endpoint, or several spellings of one, is refused before MLflow sees it', async () => {
    for (const model of [undefined, '', ['ann-chat'], { name: 'ann-chat' }, 42]) {
      const r = await chatByBody('bob', model);
      expect([400, 403]).toContain(r.status);
    }
  });

  it('USE does not let one change or delete the endpoint; its manager can', async () => {
    expect((await as('bob', 'POST', `${GW}/endpoints/update`, { endpoint_id: ids.annChat, name: 'bob-chat' })).status).toBe(403);
    expect((await as('bob', 'DELETE', `${GW}/endpoints/delete`, { endpoint_id: ids.annChat })).status).toBe(403);
    expect((await as('bob', 'GET', `${GW}/endpoints/get?endpoint_id=${ids.annChat}`)).status).toBe(200);
    expect((await as('cat', 'GET', `${GW}/endpoints/get?endpoint_id=${ids.annChat}`)).status).toBe(403);
  });

  it('lists show each caller only what they may read, and no secret value to anyone', async () => {
    expect(await listNames('bob', 'endpoints')).toEqual(['ann-chat']);
    expect(await listNames('cat', 'endpoints')).toEqual([]);
    expect(await listNames('ann', 'endpoints')).toEqual(['ann-chat']);
    expect(await listNames('ann', 'model-definitions')).toEqual(['ann-def']);
    expect(await listNames('ann', 'secrets')).toEqual(['team-key']);
    expect(await listNames('cat', 'secrets')).toEqual([]);
    for (const who of ['ann', 'bob']) {
      for (const what of ['endpoints', 'secrets', 'model-definitions']) {
        const text = await (await as(who, 'GET', `${GW}/${what}/list`)).text();
        expect(text).not.toContain(SECRET_VALUE);
      }
    }
  });

  it('a renamed endpoint keeps its grants under the new name', async () => {
    const r = await as('ann', 'POST', `${GW}/endpoints/update`, { endpoint_id: ids.annChat, name: 'ann-chat-2' });
    expect(r.status).toBe(200);
    expect((await chat('bob', 'ann-chat-2')).status).toBe(200);
    expect((await chat('cat', 'ann-chat-2')).status).toBe(403);
  });
});
