import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

/*
 * MLflow's SQLite store hands an experiment id out again after `mlflow gc` (no AUTOINCREMENT: the
 * highest id freed is reused). When a create answers with an id, flowgate prunes the old experiment's
 * grants and forgets the names it cached: else, for up to the look-up TTL, a pattern grant matching the
 * old experiment's name would decide on the new one.
 */

const state = { name7: 'mallory/scratch' };
const json = (status: number, body: unknown) => ({ status, body });
function mlflow(req: SeenRequest) {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/version') return json(200, '3.17.2');
  if (url.pathname.endsWith('/experiments/get')) return json(200, { experiment: { experiment_id: '7', name: state.name7 } });
  if (url.pathname.endsWith('/experiments/create')) {
    state.name7 = JSON.parse(req.body).name;
    return json(200, { experiment_id: '7' });
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
  await admin.withTokens(['mallory', 'alice']);
  await admin.call('POST', '/api/2.0/mlflow/permissions/users/mallory/patterns', { resource_type: 'experiment', pattern: 'mallory/*', permission: 'READ' });
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
    const made = await fetch(`${fg.url}/api/2.0/mlflow/experiments/create`, {
      method: 'POST',
      headers: { Authorization: admin.basicOf('alice'), 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'alice/payroll' }),
    });
    expect(made.status).toBe(200);
    expect((await get('mallory')).status).toBe(403);
  });
});
