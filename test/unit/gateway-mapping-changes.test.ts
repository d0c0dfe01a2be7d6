import { mkdtempSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createMappingForgetter } from '../../src/authz/mapping-forgetter.js';
import { createMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { openSqliteStore } from '../../src/store/database.js';
import { createMappingChanges, watchMappingChanges } from '../../src/store/mapping-changes.js';
import { upstreamJsonFor } from '../helpers/mlflow-connection.js';

/**
 * Two flowgate processes' look-ups and mapping forgetters on one SQLite file, in front of a stand-in
 * for MLflow's gateway `get` calls: what one forgets for a gateway rename or delete, the other forgets
 * at its next poll of the log, long before the look-up cache's TTL.
 */
let server: Server;
let baseUrl: string;
let endpointName = 'chat-old';
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    hits.push(`${url.pathname}${url.search}`);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname !== '/api/3.0/mlflow/gateway/endpoints/get') return send(404, { error_code: 'ENDPOINT_NOT_FOUND', message: 'unknown' });
    const byId = url.searchParams.get('endpoint_id');
    if (byId === 'e-1') return send(200, { endpoint: { endpoint_id: 'e-1', name: endpointName } });
    // A database matching names ignoring case: any spelling finds the stored one.
    const byName = url.searchParams.get('name');
    if (byName !== null && byName.toLowerCase() === endpointName) return send(200, { endpoint: { endpoint_id: 'e-1', name: endpointName } });
    return send(404, { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'no endpoint' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  endpointName = 'chat-old';
  hits.length = 0;
});

/** One flowgate's share: its store connection, look-ups (TTL ten minutes), forgetter, and its poll of the log. */
function flowgateOn(path: string) {
  const sql = openSqliteStore(path);
  const client = upstreamJsonFor(baseUrl);
  const lookups = createMlflowLookups({ client, cacheSize: 100, ttlMs: 600_000, mlflowVersion: '3.17.2' });
  const mappings = createMappingForgetter(lookups, createMappingChanges(sql));
  const watch = watchMappingChanges(sql.db, 10, (changes) => mappings.applyExternal(changes));
  cleanups.push(async () => {
    watch.stop();
    await client.close();
    await sql.close();
  });
  return { lookups, mappings };
}

/** Long enough for a change that wrongly reached the log to have reached the other flowgate too (it polls every 10 ms). */
const settle = () => new Promise((r) => setTimeout(r, 80));
/** What another flowgate learns at its next poll: waited for, not assumed to take under 80 ms (a loaded CI machine takes longer). */
const until = (check: () => Promise<unknown>) => expect.poll(check, { timeout: 10_000 });
/** A look-up's answer, or its error's code. */
const outcome = (p: Promise<unknown>) => p.then((v) => v, (e: { code?: string }) => e.code);
const nameOf = async (fg: ReturnType<typeof flowgateOn>) => (await fg.lookups.gatewayObject('gateway_endpoint', 'e-1')).name;

describe('a gateway rename or delete reaches every flowgate on the store', () => {
  it('the other flowgate forgets the id → name and every endpoint-name spelling at its next poll', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fg-gw-')), 'p.db');
    const [a, b] = [flowgateOn(path), flowgateOn(path)];
    expect(await nameOf(b)).toBe('chat-old');
    expect(await b.lookups.gatewayEndpointName('CHAT-OLD')).toBe('chat-old');

    endpointName = 'chat-new';
    // Cached: b does not ask again.
    const asked = hits.length;
    expect(await nameOf(b)).toBe('chat-old');
    expect(await b.lookups.gatewayEndpointName('CHAT-OLD')).toBe('chat-old');
    expect(hits.length).toBe(asked);

    // a forwarded the rename.
    a.mappings.forget({ cache: 'gateway', key: 'e-1' });
    await until(() => nameOf(b)).toBe('chat-new');
    await expect(b.lookups.gatewayEndpointName('CHAT-OLD')).rejects.toMatchObject({ code: 'RESOURCE_DOES_NOT_EXIST' });
    expect(await b.lookups.gatewayEndpointName('Chat-New')).toBe('chat-new');
  });

  it("an empty key forgets the endpoint-name spellings alone; another id's change leaves this id's name", async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fg-gw-')), 'p.db');
    const [a, b] = [flowgateOn(path), flowgateOn(path)];
    expect(await nameOf(b)).toBe('chat-old');
    expect(await b.lookups.gatewayEndpointName('Chat-Old')).toBe('chat-old');
    endpointName = 'chat-new';

    a.mappings.forget({ cache: 'gateway', key: 'e-2' });
    a.mappings.forget({ cache: 'gateway', key: '' });
    await until(() => outcome(b.lookups.gatewayEndpointName('Chat-Old'))).toBe('RESOURCE_DOES_NOT_EXIST');
    // The empty key arrived after e-2's change, so that one has been applied too, and left e-1's name.
    expect(await nameOf(b)).toBe('chat-old');
  });

  it('forgetHere stays in this process and writes nothing to the log', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fg-gw-')), 'p.db');
    const [a, b] = [flowgateOn(path), flowgateOn(path)];
    expect(await nameOf(a)).toBe('chat-old');
    expect(await nameOf(b)).toBe('chat-old');
    endpointName = 'chat-new';
    a.mappings.forgetHere([{ cache: 'gateway', key: 'e-1' }]);
    await settle();
    expect(await nameOf(a)).toBe('chat-new');
    expect(await nameOf(b)).toBe('chat-old');
  });
});
