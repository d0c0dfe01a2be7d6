import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

/*
 * MLflow's SQLite store hands an experiment id out again after `mlflow gc` (no AUTOINCREMENT: the
 * highest id freed is reused), to `experiments/create` and to the usage experiment `gateway/<name>` it
 * makes for a new endpoint (SqlAlchemyStore._get_or_create_experiment_id → create_experiment, the same
 * id sequence). When such an answer names the id, flowgate forgets the names it cached: else, for up to
 * the look-up TTL, a pattern grant matching the old experiment's name would decide on the new one.
 */

const state = { name7: 'mallory/scratch', tags: [] as unknown[] };
const json = (status: number, body: unknown) => ({ status, body });
function mlflow(req: SeenRequest) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/version') return json(200, '3.17.2');
  if (url.pathname.endsWith('/experiments/get')) return json(200, { experiment: { experiment_id: '7', name: state.name7, tags: state.tags } });
  if (url.pathname.endsWith('/experiments/create')) {
    state.name7 = JSON.parse(req.body).name;
    return json(200, { experiment_id: '7' });
  }
  if (url.pathname.endsWith('/gateway/endpoints/create')) {
    const name = JSON.parse(req.body).name as string;
    state.name7 = `gateway/${name}`;
    state.tags = [{ key: 'mlflow.experiment.sourceId', value: 'e-1' }];
    return json(200, { endpoint: { endpoint_id: 'e-1', name, experiment_id: '7', model_mappings: [] } });
  }
  return json(200, {});
}

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const admin = jsonCaller(() => fg.url);
const get = (who: string) => fetch(`${fg.url}/api/2.0/mlflow/experiments/get?experiment_id=7`, { headers: { Authorization: admin.basicOf(who) } });
const post = (path: string, auth: string, body: unknown) =>
  fetch(`${fg.url}${path}`, { method: 'POST', headers: { Authorization: auth, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

beforeAll(async () => {
  upstream = await startStubUpstream(mlflow);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  await admin.withTokens(['mallory', 'alice']);
  await admin.call('POST', '/api/2.0/mlflow/permissions/users/mallory/patterns', { resource_type: 'experiment', pattern: 'mallory/*', permission: 'READ' });
});
beforeEach(() => {
  state.name7 = 'mallory/scratch';
  state.tags = [];
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('an experiment id MLflow hands out again', () => {
  it("is decided on the new experiment's name, not the name cached for the old one", async () => {
    expect((await get('mallory')).status).toBe(200);
    // `mlflow gc` removed experiment 7 (outside flowgate); alice creates hers and MLflow gives it id 7.
    expect((await post('/api/2.0/mlflow/experiments/create', admin.basicOf('alice'), { name: 'alice/payroll' })).status).toBe(200);
    expect((await get('mallory')).status).toBe(403);
  });

  it("is decided on a gateway endpoint's usage experiment's name, not the name cached for the old one", async () => {
    // Back to mallory/scratch in MLflow (another gc, another create) and read by mallory: cached again.
    await post('/api/2.0/mlflow/experiments/create', adminAuth(), { name: 'mallory/scratch' });
    expect((await get('mallory')).status).toBe(200);
    // The admin creates endpoint payroll-llm and MLflow makes gateway/payroll-llm as id 7.
    expect((await post('/api/3.0/mlflow/gateway/endpoints/create', adminAuth(), { name: 'payroll-llm', model_configs: [] })).status).toBe(200);
    expect(upstream.seen.some((r) => r.url.includes('/experiments/get') && r.url.includes('ajax-api'))).toBe(true);
    expect((await get('mallory')).status).toBe(403);
  });
});
