import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

/*
 * MLflow also creates experiments when a gateway endpoint is created (its usage experiment
 * gateway/<name>, SqlAlchemyStore._get_or_create_experiment_id → create_experiment, same id sequence),
 * so that experiment may take an id `mlflow gc` freed: the names cached for ids are forgotten then too,
 * or a pattern on the old experiment's name would keep deciding.
 */
const state = { name7: 'mallory/scratch', tags: [] as unknown[] };
const json = (status: number, body: unknown) => ({ status, body });
function mlflow(req: SeenRequest) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/version') return json(200, '3.17.2');
  if (url.pathname.endsWith('/experiments/get')) return json(200, { experiment: { experiment_id: '7', name: state.name7, tags: state.tags } });
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

beforeAll(async () => {
  upstream = await startStubUpstream(mlflow);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  await admin.withTokens(['mallory']);
  await admin.call('POST', '/api/2.0/mlflow/permissions/users/mallory/patterns', { resource_type: 'experiment', pattern: 'mallory/*', permission: 'READ' });
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('an experiment id MLflow hands out again to a gateway endpoint’s usage experiment', () => {
  it("is decided on the usage experiment's name, not the name cached for the old one", async () => {
    expect((await get('mallory')).status).toBe(200);
    // mlflow gc freed experiment 7; the admin creates endpoint payroll-llm and MLflow makes gateway/payroll-llm as id 7.
    const made = await fetch(`${fg.url}/api/3.0/mlflow/gateway/endpoints/create`, {
      method: 'POST',
      headers: { Authorization: adminAuth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'payroll-llm', model_configs: [] }),
    });
    expect(made.status).toBe(200);
    expect(upstream.seen.some((r) => r.url.includes('/experiments/get') && r.url.includes('ajax-api'))).toBe(true);
    expect((await get('mallory')).status).toBe(403);
  });
});
