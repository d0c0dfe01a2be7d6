import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/*
 * Against the real MLflow: a rename whose client hangs up right after sending it is still carried out
 * by MLflow, so flowgate's after-hook (move the grants, prune stale ones on the new name) must run too.
 * Before, it did not: an EDIT holder renamed a model onto a free name she held MANAGE on (left there
 * by her own earlier hung-up rename) and then managed another user's model.
 */

let mlflow: MlflowServer;
let fg: TestFlowgate;
const admin = jsonCaller(() => fg.url);

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
  await admin.withTokens(['bob', 'mallory']);
}, 240_000);
afterAll(async () => {
  await fg?.close();
  await mlflow?.stop();
  if (fg) removeDir(fg.dir);
});

/** The whole request on a raw socket, closed `afterMs` after the last byte (no answer read). */
function hangUp(method: string, path: string, body: unknown, auth: string, afterMs: number): Promise<void> {
  const url = new URL(fg.url);
  const payload = JSON.stringify(body);
  return new Promise((resolve) => {
    const s = connect(Number(url.port), url.hostname, () => {
      s.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`);
      setTimeout(() => {
        s.destroy();
        resolve();
      }, afterMs);
    });
    s.on('error', () => resolve());
  });
}

const exists = async (name: string) => (await fetch(`${fg.url}/api/2.0/mlflow/registered-models/get?name=${name}`, { headers: { Authorization: adminAuth() } })).status === 200;

describe('a hung-up rename, against MLflow 3.17.2', () => {
  it('a hang-up 0-3 ms after sending never leaves the grants on the old name of a renamed model', async () => {
    const mallory = admin.basicOf('mallory');
    const outcomes: string[] = [];
    for (let i = 0; i < 8; i++) {
      const from = `m-${i}`;
      await admin.call('POST', '/api/2.0/mlflow/registered-models/create', { name: from }, mallory);
      await hangUp('POST', '/api/2.0/mlflow/registered-models/rename', { name: from, new_name: `${from}-moved` }, mallory, i % 4);
      await new Promise((r) => setTimeout(r, 300));
      const renamed = await exists(`${from}-moved`);
      const left = JSON.stringify(await admin.call('GET', '/api/2.0/mlflow/permissions/users/mallory/registered-models'));
      outcomes.push(`${i % 4}ms: renamed=${renamed} grantLeftOnOldName=${left.includes(`"${from}"`)} grantOnNew=${left.includes(`"${from}-moved"`)}`);
    }
    expect(outcomes.filter((o) => o.includes('renamed=true')).length, outcomes.join('\n')).toBeGreaterThan(0);
    expect(outcomes.filter((o) => o.includes('grantLeftOnOldName=true')), outcomes.join('\n')).toEqual([]);
  }, 120_000);

  it("an EDIT holder never ends up managing another user's model by hung-up renames", async () => {
    const mallory = admin.basicOf('mallory');
    await admin.call('POST', '/api/2.0/mlflow/registered-models/create', { name: 'prod' }, admin.basicOf('bob'));
    await admin.call('POST', '/api/2.0/mlflow/permissions/users/mallory/registered-models/prod', { permission: 'EDIT' });
    await admin.call('POST', '/api/2.0/mlflow/registered-models/create', { name: 'mine' }, mallory);
    for (const [from, to] of [['mine', 'mine-gone'], ['prod', 'mine']] as const) {
      for (let attempt = 0; attempt < 3 && !(await exists(to)); attempt++) await hangUp('POST', '/api/2.0/mlflow/registered-models/rename', { name: from, new_name: to }, mallory, 0);
      await new Promise((r) => setTimeout(r, 300));
    }
    expect(await exists('mine')).toBe(true);
    const del = await fetch(`${fg.url}/api/2.0/mlflow/registered-models/delete`, {
      method: 'DELETE',
      headers: { Authorization: mallory, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'mine' }),
    });
    expect(del.status, await del.text()).toBe(403);
  }, 120_000);
});
