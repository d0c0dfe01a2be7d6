import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * Two flowgates on one store (the SQLite file both open, or with FLOWGATE_TEST_STORE=postgres the
 * database both use) in front of the real MLflow's AI gateway. One caches a gateway object's generated
 * id → name; the other renames the object. The first must decide on the new name well within the
 * look-up cache's TTL (ten minutes here): the rename reaches it through the store's mapping change log.
 */
const GW = '/api/3.0/mlflow/gateway';
const TTL_MS = '600000';
const WATCH_MS = '100';

describe('a gateway rename through one flowgate reaches the other flowgates on the store', () => {
  let mlflow: MlflowServer;
  let provider: Awaited<ReturnType<typeof startStubUpstream>>;
  let a: TestFlowgate;
  let b: TestFlowgate;
  const { call, basicOf, withTokens } = jsonCaller(() => a.url);
  const ids: Record<string, string> = {};

  const as = (fg: TestFlowgate, who: string, method: string, path: string) =>
    fetch(fg.url + path, { method, headers: { Authorization: basicOf(who) } });
  const grant = (username: string, segment: string, name: string, permission: string) =>
    call('POST', `/api/2.0/mlflow/permissions/users/${username}/gateways/${segment}/${encodeURIComponent(name)}`, { permission });

  /** Asks until `check` holds (every 20 ms) or `ms` passed; the last answer's status either way. */
  async function until(ms: number, ask: () => Promise<Response>, check: (status: number, json: unknown) => boolean) {
    const started = Date.now();
    for (;;) {
      const r = await ask();
      const json = (await r.json()) as unknown;
      if (check(r.status, json)) return { status: r.status, json, ms: Date.now() - started };
      if (Date.now() - started > ms) return { status: r.status, json, ms: Date.now() - started };
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  beforeAll(async () => {
    provider = await startStubUpstream(() => ({ status: 200, body: { id: 'c1', object: 'chat.completion', choices: [] } }));
    mlflow = await startMlflowServer({
      env: { MLFLOW_GATEWAY_API_BASE_ALLOWED_SCHEMES: 'http,https', MLFLOW_GATEWAY_API_BASE_ALLOW_PRIVATE_IPS: 'true' },
    });
    const env = { FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_LOOKUP_CACHE_TTL_MS: TTL_MS, FLOWGATE_STORE_WATCH_MS: WATCH_MS };
    a = await startTestFlowgate(env);
    b = await startTestFlowgate(env, a.dir);
    await withTokens(['dana']);
    const secret = await call('POST', `${GW}/secrets/create`, {
      secret_name: 'replica-key',
      secret_value: { api_key: 'sk-replicas-0123456789' },
      provider: 'openai',
      auth_config: { api_base: `${provider.url}/v1` },
    });
    ids.secret = (secret.secret as { secret_id: string }).secret_id;
    const def = await call('POST', `${GW}/model-definitions/create`, { name: 'replica-def-old', secret_id: ids.secret, provider: 'openai', model_name: 'gpt-4o' });
    ids.def = (def.model_definition as { model_definition_id: string }).model_definition_id;
    const endpoint = await call('POST', `${GW}/endpoints/create`, {
      name: 'replica-chat-old',
      model_configs: [{ model_definition_id: ids.def, linkage_type: 'PRIMARY', weight: 1 }],
    });
    ids.endpoint = (endpoint.endpoint as { endpoint_id: string }).endpoint_id;
  }, 240_000);

  afterAll(async () => {
    await b?.close();
    await a?.close();
    if (a) removeDir(a.dir);
    await mlflow?.stop();
    await provider?.close();
  });

  it.each([
    ['endpoint', 'endpoints', 'endpoint_id', 'replica-chat', (json: unknown) => (json as { endpoint?: { name?: string } }).endpoint?.name],
    ['model definition', 'model-definitions', 'model_definition_id', 'replica-def', (json: unknown) => (json as { model_definition?: { name?: string } }).model_definition?.name],
  ] as const)('%s: B decides on the new name within a second of A renaming it, the TTL being ten minutes', async (_, segment, idField, base, nameIn) => {
    const id = ids[idField === 'endpoint_id' ? 'endpoint' : 'def']!;
    const get = (fg: TestFlowgate) => () => as(fg, 'dana', 'GET', `${GW}/${segment}/get?${idField}=${id}`);

    // dana may not read it: B looks its id up (cached from now on) and refuses.
    expect((await get(b)()).status).toBe(403);

    // Renamed through A; dana is then given READ on the new name (through A too).
    await call('POST', `${GW}/${segment}/update`, { [idField]: id, name: `${base}-new` });
    await grant('dana', segment, `${base}-new`, 'READ');
    // A forgot the id when it forwarded the rename: it decides on the new name at once.
    const onA = await get(a)();
    expect(onA.status).toBe(200);
    expect(nameIn(await onA.json())).toBe(`${base}-new`);

    // B decides on the new name once it has read the change log (its cached name would last ten minutes).
    const onB = await until(5000, get(b), (status) => status === 200);
    expect(onB.status).toBe(200);
    expect(nameIn(onB.json)).toBe(`${base}-new`);
    expect(onB.ms).toBeLessThan(1000);
  });

  it('a delete through A is forgotten on B too: the id is then decided as one MLflow does not have', async () => {
    const created = await call('POST', `${GW}/model-definitions/create`, { name: 'replica-def-doomed', secret_id: ids.secret, provider: 'openai', model_name: 'gpt-4o' });
    const id = (created.model_definition as { model_definition_id: string }).model_definition_id;
    await grant('dana', 'model-definitions', 'replica-def-doomed', 'READ');
    const get = () => as(b, 'dana', 'GET', `${GW}/model-definitions/get?model_definition_id=${id}`);
    expect((await until(5000, get, (status) => status === 200)).status).toBe(200);

    await call('DELETE', `${GW}/model-definitions/delete`, { model_definition_id: id });
    // A grant given again on the name (a new object may take it) holds no permission on the deleted id.
    // With the id's old name still cached, B would allow and relay MLflow's 404; forgotten, B asks
    // MLflow, which has no such id, and refuses it as it refuses a hidden one.
    await grant('dana', 'model-definitions', 'replica-def-doomed', 'READ');
    const gone = await until(5000, get, (status) => status === 403);
    expect(gone.status).toBe(403);
    expect(gone.ms).toBeLessThan(1000);
  });
});
