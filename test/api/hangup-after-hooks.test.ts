import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { sendJson, startSlowMlflow } from '../helpers/hang-up.js';

/*
 * An after-hook (creator grant, grants dropped with a delete or moved with a rename, mapping change
 * logged) runs whether or not the client is still connected when MLflow answers: MLflow has made the
 * change. A hang-up used to skip every hook (ForwardedCall returned on `res.destroyed`).
 */

const DELAY_MS = 400;
const late = (body: unknown) => ({ body, delayMs: DELAY_MS });
let upstream: Awaited<ReturnType<typeof startSlowMlflow>>;

beforeAll(async () => {
  upstream = await startSlowMlflow((path, body) => {
    if (path.endsWith('/experiments/create')) return late({ experiment_id: '7' });
    if (path.endsWith('/registered-models/get')) return { body: { registered_model: { name: 'm1', tags: [] } } };
    if (path.endsWith('/registered-models/delete')) return late({});
    if (path.endsWith('/registered-models/create')) return { body: { registered_model: { name: JSON.parse(body).name, tags: [] } } };
    if (path.endsWith('/registered-models/rename')) return late({ registered_model: { name: JSON.parse(body).new_name } });
    return undefined;
  });
});

let fg: TestFlowgate;
const admin = jsonCaller(() => fg.url);

beforeAll(async () => {
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  await admin.withTokens(['alice', 'bob', 'mallory']);
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const sendAndHangUp = (method: string, path: string, body: unknown, auth: string) => sendJson(fg.url + path, method, body, auth, DELAY_MS / 4);

const settle = () => new Promise((r) => setTimeout(r, DELAY_MS * 2));

describe('a client that goes away before MLflow answers', () => {
  it('still gets the creator grant on what MLflow created for it', async () => {
    await sendAndHangUp('POST', '/api/2.0/mlflow/experiments/create', { name: 'x' }, admin.basicOf('alice'));
    await settle();
    expect(upstream.seen).toContain('POST /api/2.0/mlflow/experiments/create');
    const grants = await admin.call('GET', '/api/2.0/mlflow/permissions/users/alice/experiments');
    expect(JSON.stringify(grants)).toContain('"7"');
  });

  it("drops a deleted model's grants once MLflow deleted it", async () => {
    await admin.call('POST', '/api/2.0/mlflow/permissions/users/alice/registered-models/m1', { permission: 'MANAGE' });
    await admin.call('POST', '/api/2.0/mlflow/permissions/users/bob/registered-models/m1', { permission: 'READ' });
    await sendAndHangUp('DELETE', '/api/2.0/mlflow/registered-models/delete', { name: 'm1' }, admin.basicOf('alice'));
    await settle();
    expect(upstream.seen).toContain('DELETE /api/2.0/mlflow/registered-models/delete');
    const bob = await admin.call('GET', '/api/2.0/mlflow/permissions/users/bob/registered-models');
    expect(JSON.stringify(bob)).not.toContain('m1');
  });

  it('a rename needing EDIT never hands the renamed model to a MANAGE held on the new name (security-model.md, "Grants follow their resource")', async () => {
    // bob's model; mallory may edit it (EDIT: update, versions, aliases, and a rename while no pattern grants exist).
    await admin.call('POST', '/api/2.0/mlflow/permissions/users/bob/registered-models/prod', { permission: 'MANAGE' });
    await admin.call('POST', '/api/2.0/mlflow/permissions/users/mallory/registered-models/prod', { permission: 'EDIT' });
    const mallory = admin.basicOf('mallory');
    // mallory's own model, renamed away with a hang-up: her MANAGE stays on the now free name 'mine'.
    await admin.call('POST', '/api/2.0/mlflow/registered-models/create', { name: 'mine' }, mallory);
    await sendAndHangUp('POST', '/api/2.0/mlflow/registered-models/rename', { name: 'mine', new_name: 'mine2' }, mallory);
    await settle();
    // bob's model renamed onto it, again hanging up: no prune of 'mine', no move of prod's grants.
    await sendAndHangUp('POST', '/api/2.0/mlflow/registered-models/rename', { name: 'prod', new_name: 'mine' }, mallory);
    await settle();
    const del = await fetch(`${fg.url}/api/2.0/mlflow/registered-models/delete`, {
      method: 'DELETE',
      headers: { Authorization: mallory, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'mine' }),
    });
    expect(del.status).toBe(403);
    // The hooks ran to their end for a client that was gone: nothing counted as a hook failure.
    expect(fg.logs.filter((l) => l.includes('after-response hook failed'))).toEqual([]);
  });
});
