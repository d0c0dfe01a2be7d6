import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { sendJson, startSlowMlflow } from '../helpers/hang-up.js';
import { onPostgres } from '../helpers/test-store.js';

/*
 * After-hooks run for a client that hung up, "a mapping forgotten on every replica" among them
 * (security-model.md). followGateway (endpoints/update, endpoints/delete, ...) logged the change for
 * other replicas only from the answer's 'close', which had fired before the hook began for a client
 * already gone: no mapping_changes row was written.
 */
const DELAY_MS = 400;
let upstream: Awaited<ReturnType<typeof startSlowMlflow>>;
let fg: TestFlowgate;
beforeAll(async () => {
  upstream = await startSlowMlflow((path, body) => {
    if (path.endsWith('/endpoints/get')) return { body: { endpoint: { endpoint_id: 'e-1', name: 'alpha', model_mappings: [] } } };
    if (path.endsWith('/endpoints/update')) return { body: { endpoint: { endpoint_id: 'e-1', name: JSON.parse(body).name, model_mappings: [] } }, delayMs: DELAY_MS };
    return undefined;
  });
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const update = (name: string, hangUp: boolean) =>
  sendJson(`${fg.url}/api/3.0/mlflow/gateway/endpoints/update`, 'POST', { endpoint_id: 'e-1', name }, adminAuth(), hangUp ? DELAY_MS / 4 : undefined);

const gatewayRows = () => {
  const db = new Database(join(fg.dir, 'flowgate.db'), { readonly: true });
  try {
    return (db.prepare("SELECT count(*) AS n FROM mapping_changes WHERE cache = 'gateway' AND key <> ''").get() as { n: number }).n;
  } finally {
    db.close();
  }
};
const settle = () => new Promise((r) => setTimeout(r, DELAY_MS * 2));

// Reads the SQLite change log itself; on PostgreSQL test/security/hangup-gateway-replica.test.ts shows the same end to end.
describe.skipIf(onPostgres())('a gateway rename whose client hung up', () => {
  it('control: a client that stays logs the id for the other flowgates', async () => {
    const before = gatewayRows();
    await update('beta', false);
    await settle();
    expect(gatewayRows() - before).toBeGreaterThan(0);
  });
  it('is logged for the other flowgates too (every after-hook runs for a client that hung up)', async () => {
    const before = gatewayRows();
    await update('gamma', true);
    await settle();
    expect(gatewayRows() - before).toBeGreaterThan(0);
  });
});
