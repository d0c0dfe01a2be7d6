import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { sendJson, startSlowMlflow } from '../helpers/hang-up.js';

/*
 * Two flowgates on one store. Endpoint e-1 ("alpha") is renamed to "beta" through flowgate A by a
 * client that hangs up before MLflow answers: A's after-hook moves the grants and must still tell B to
 * forget e-1's cached name (it was tied to the answer's 'close', which had already fired). Else B kept
 * deciding reads of e-1 by "alpha": a grant on the freed name "alpha" read alice's "beta" there.
 */
const DELAY_MS = 400;
const state = { name: 'alpha' };
let upstream: Awaited<ReturnType<typeof startSlowMlflow>>;
beforeAll(async () => {
  upstream = await startSlowMlflow((path, body) => {
    if (path.endsWith('/endpoints/get')) return { body: { endpoint: { endpoint_id: 'e-1', name: state.name, model_mappings: [] } } };
    if (path.endsWith('/endpoints/bindings/list')) return { body: { bindings: [{ endpoint_id: 'e-1', resource_type: 'scorer', resource_id: 'alice-secret-judge' }] } };
    if (path.endsWith('/endpoints/update')) {
      // MLflow has renamed it by the time it answers.
      state.name = JSON.parse(body).name;
      return { body: { endpoint: { endpoint_id: 'e-1', name: state.name, model_mappings: [] } }, delayMs: DELAY_MS };
    }
    return undefined;
  });
});

const dir = mkdtempSync(join(tmpdir(), 'flowgate-'));
let a: TestFlowgate;
let b: TestFlowgate;
const admin = jsonCaller(() => a.url);
beforeAll(async () => {
  a = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url }, dir);
  b = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url }, dir);
  await admin.withTokens(['mallory']);
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await upstream?.close();
  removeDir(dir);
});

const renameHangingUp = (to: string) => sendJson(`${a.url}/api/3.0/mlflow/gateway/endpoints/update`, 'POST', { endpoint_id: 'e-1', name: to }, adminAuth(), DELAY_MS / 4);
const bindingsOnB = (auth: string) => fetch(`${b.url}/api/3.0/mlflow/gateway/endpoints/bindings/list?endpoint_id=e-1`, { headers: { Authorization: auth } });

describe('a gateway rename through one flowgate whose client hung up', () => {
  it("is forgotten by the other flowgate: a grant on the freed old name does not read the renamed endpoint there", async () => {
    // B has e-1 cached as "alpha" (any read of it there).
    expect((await bindingsOnB(admin.basicOf('mallory'))).status).toBe(403);
    await renameHangingUp('beta');
    await new Promise((r) => setTimeout(r, DELAY_MS * 3)); // well past the SQLite store's 1 s change watch
    expect(state.name).toBe('beta');
    // "alpha" is free: mallory is given it (or creates an endpoint of that name, getting MANAGE).
    await admin.call('POST', '/api/2.0/mlflow/permissions/users/mallory/gateways/endpoints/alpha', { permission: 'READ' });
    await new Promise((r) => setTimeout(r, 1500));
    const r = await bindingsOnB(admin.basicOf('mallory'));
    const text = await r.text();
    expect(r.status, text).toBe(403);
  });
});
