import { connect, type Socket } from 'node:net';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/** Bodies flowgate reads itself (the gate's, the admin API's): a client that leaves, a client that stalls. */
const DEADLINE_MS = 400;
let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let bobAuth: string;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_BODY_READ_TIMEOUT_MS: String(DEADLINE_MS) });
  await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth())
    .send({ username: 'bob', display_name: 'Bob', is_admin: false, is_service_account: false });
  const minted = await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'bob' });
  bobAuth = basic('bob', minted.body.token as string);
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

/** Sends headers announcing `declared` bytes and only `sent` of them, on a raw socket. */
function partialPost(path: string, auth: string, requestId: string, declared: number, sent: string): Promise<Socket> {
  const { hostname, port } = new URL(fg.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(
        `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\n` +
          `X-Request-Id: ${requestId}\r\nContent-Length: ${declared}\r\n\r\n${sent}`,
      );
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

const lines = () => fg.logs.map((l) => JSON.parse(l) as Record<string, unknown>);
async function requestLine(requestId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 100; i++) {
    const line = lines().find((l) => l.msg === 'request' && l.requestId === requestId);
    if (line) return line;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no request line for ${requestId}`);
}

const ROUTES = [
  ['the gate', '/api/2.0/mlflow/runs/create', () => bobAuth],
  ['the admin API', '/api/2.0/mlflow/users/create', adminAuth],
] as const;

describe.each(ROUTES)('a JSON body read by %s', (_name, path, auth) => {
  it('of a client that goes away mid-body is a quiet 499: no error line, no stack', async () => {
    const id = `gone-${path.length}`;
    const socket = await partialPost(path, auth(), id, 200, '{"experiment_id":');
    await new Promise((r) => setTimeout(r, 50));
    socket.destroy();
    const line = await requestLine(id);
    expect(line).toMatchObject({ status: 499, aborted: true });
    await new Promise((r) => setTimeout(r, 50));
    const errors = lines().filter((l) => l.level === 'error' || l.level === 'fatal' || JSON.stringify(l).includes('stack'));
    expect(errors).toEqual([]);
  });

  it('that stalls below its Content-Length gets 408 in MLflow error JSON at the deadline, and the connection closes', async () => {
    const id = `slow-${path.length}`;
    const started = Date.now();
    const socket = await partialPost(path, auth(), id, 200, '{"experiment_id":');
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (c: Buffer) => (text += c.toString()));
      socket.on('close', () => resolve(text));
    });
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(elapsed).toBeLessThan(DEADLINE_MS + 2000);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toMatch(/\r\nconnection: close\r\n/i);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    expect(body).toEqual({ error_code: 'REQUEST_TIMEOUT', message: expect.stringContaining(`${DEADLINE_MS} ms`) });
    expect(await requestLine(id)).toMatchObject({ status: 408 });
  });
});
