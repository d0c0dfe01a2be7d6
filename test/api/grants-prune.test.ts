import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGrantsPrune } from '../../src/commands/grants-prune.js';
import { loadConfig } from '../../src/config.js';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';
import { storeSettings } from '../helpers/test-store.js';

/**
 * MLflow's answers: experiment 1 and model `here` exist, experiment 2 and model `gone` were collected, experiment 3 cannot be told.
 * The gateway: secret `kept-key` and endpoint `here-chat` exist (a secret found by name in its list, an
 * endpoint got by name), `lost-key` and `gone-chat` do not; the model definitions' list is empty (MLflow
 * leaves an empty list out of its answer) and their every name gone.
 */
function mlflow(req: SeenRequest) {
  const url = new URL(req.url, 'http://x');
  const missing = { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'gone' } };
  if (url.pathname === '/api/2.0/mlflow/experiments/get') {
    const id = url.searchParams.get('experiment_id');
    if (id === '1') return { status: 200, body: { experiment: { experiment_id: '1', lifecycle_stage: 'deleted' } } };
    if (id === '3') return { status: 500, body: { error_code: 'INTERNAL_ERROR', message: 'down' } };
    return missing;
  }
  if (url.pathname === '/api/2.0/mlflow/registered-models/get')
    return url.searchParams.get('name') === 'here' ? { status: 200, body: { registered_model: { name: 'here' } } } : missing;
  if (url.pathname === '/api/3.0/mlflow/gateway/secrets/list') return { status: 200, body: { secrets: [{ secret_id: 's-1', secret_name: 'kept-key' }] } };
  if (url.pathname === '/api/3.0/mlflow/gateway/model-definitions/list') return { status: 200, body: {} };
  if (url.pathname === '/api/3.0/mlflow/gateway/endpoints/get')
    return url.searchParams.get('name') === 'here-chat' ? { status: 200, body: { endpoint: { endpoint_id: 'e-1', name: 'here-chat' } } } : missing;
  return { status: 200, body: {} };
}

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const granted = async () =>
  ((await fg.store.sql.all('SELECT resource_kind || \':\' || resource_id AS ref FROM grants ORDER BY ref')) as { ref: string }[]).map((r) => r.ref);

beforeAll(async () => {
  upstream = await startStubUpstream(mlflow);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'bob' });
  for (const path of [
    'experiments/1',
    'experiments/2',
    'experiments/3',
    'registered-models/here',
    'registered-models/gone',
    'prompts/gone',
    'gateways/secrets/kept-key',
    'gateways/secrets/lost-key',
    'gateways/model-definitions/gone-def',
    'gateways/endpoints/here-chat',
    'gateways/endpoints/gone-chat',
  ])
    expect((await request(fg.url).post(`/api/2.0/mlflow/permissions/users/bob/${path}`).set('Authorization', adminAuth()).send({ permission: 'READ' })).status).toBe(201);
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('flowgate grants prune', () => {
  const config = async () => loadConfig({ ...(await storeSettings(fg.dir)), FLOWGATE_UPSTREAM_URL: upstream.url });
  const run = async (...args: string[]) => {
    let out = '';
    const code = await runGrantsPrune(args, await config(), (t) => (out += t), (t) => (out += t));
    return { code, out };
  };

  it('with --dry-run only says what it would remove', async () => {
    const before = (await granted());
    const { out } = await run('--dry-run');
    expect(out).toContain('would prune\texperiment:2');
    expect((await granted())).toEqual(before);
  });

  it('removes the grants of resources MLflow no longer has, keeps deleted-but-restorable ones and those it cannot tell, and audits', async () => {
    const { code, out } = await run('--json');
    expect(JSON.parse(out)).toMatchObject({ checked: 11, unknown: ['experiment:3'] });
    expect(code).toBe(1); // some resources could not be checked
    expect((await granted())).toEqual(['experiment:1', 'experiment:3', 'gateway_endpoint:here-chat', 'gateway_secret:kept-key', 'registered_model:here']);
    const audit = (await fg.store.sql.all("SELECT target FROM audit_log WHERE action = 'grant.prune-orphan' ORDER BY target")) as { target: string }[];
    expect(audit.map((a) => a.target)).toEqual([
      'experiment:2',
      'gateway_endpoint:gone-chat',
      'gateway_model_definition:gone-def',
      'gateway_secret:lost-key',
      'prompt:gone',
      'registered_model:gone',
    ]);
  });

  it('refuses unknown options with a usage line', async () => {
    const { code, out } = await run('--everything');
    expect(code).toBe(2);
    expect(out).toMatch(/usage: flowgate grants prune/);
  });
});
