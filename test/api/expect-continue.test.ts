import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * `Expect: 100-continue` on the wire, read from a raw socket: flowgate decides before it invites
 * the body, so a refused request sees its 401/403 and never `100 Continue`.
 */

const KEY = 'expect-continue-key-0123456789ab';
const IRIS_ONLY_KEY = 'expect-continue-iris-0123456789';
const BODY = '{"inputs":[[1,2]]}';
const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

interface Exchange {
  /** What came back before the body was sent. */
  readonly beforeBody: string;
  /** Everything that came back until the server closed the connection. */
  readonly all: string;
}

/**
 * Sends the head, waits up to `waitMs` for an interim or final answer, then sends the body (if the
 * socket is still open) and reads until the server closes. `Connection: close` makes it close.
 */
async function exchange(port: number, head: string[], body: string, waitMs = 400): Promise<Exchange> {
  const socket = net.connect(port, '127.0.0.1');
  let data = '';
  let closed = false;
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => (data += chunk));
  const done = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closed = true;
      resolve();
    }),
  );
  socket.on('error', () => {});
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  const lines = [...head, 'Expect: 100-continue', `Content-Length: ${Buffer.byteLength(body)}`, 'Connection: close'];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  const deadline = Date.now() + waitMs;
  while (!data.includes('\r\n\r\n') && !closed && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  const beforeBody = data;
  if (!closed && socket.writable) socket.write(body);
  const timeout = setTimeout(() => socket.destroy(), 5000);
  await done;
  clearTimeout(timeout);
  return { beforeBody, all: data };
}

const statusOf = (response: string) => /^HTTP\/1\.1 (\d{3})/.exec(response)?.[1];

describe('Expect: 100-continue is answered only after the decision', () => {
  let fg: TestFlowgate;
  let mlflow: Awaited<ReturnType<typeof startStubUpstream>>;
  let model: Awaited<ReturnType<typeof startStubUpstream>>;
  let port: number;
  let bob: string;
  const dir = mkdtempSync(join(tmpdir(), 'fg-expect-'));

  beforeAll(async () => {
    mlflow = await startStubUpstream();
    model = await startStubUpstream(() => ({ status: 200, body: { predictions: [1] } }));
    const config = join(dir, 'inference.yaml');
    const keys = join(dir, 'keys.yaml');
    writeFileSync(config, `routes:\n  - { name: iris, upstream: "${model.url}", pathPrefix: /models/iris, stripPrefix: true, model: iris }\napiKeys: { file: "${keys}" }\n`);
    writeFileSync(keys, `keys:\n  - { id: all, value: ${KEY} }\n  - { id: iris-only, value: ${IRIS_ONLY_KEY}, models: [iris] }\n`);
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_INFERENCE_CONFIG_FILE: config });
    port = Number(new URL(fg.url).port);
    const api = () => request(fg.url);
    await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'bob' });
    const minted = await api()
      .patch('/api/2.0/mlflow/permissions/users/access-token')
      .set('Authorization', adminAuth())
      .send({ username: 'bob', expiration: new Date(Date.now() + 86_400_000).toISOString() });
    bob = basic('bob', minted.body.token as string);
    const grant = await api().post('/api/2.0/mlflow/permissions/users/bob/experiments/7').set('Authorization', adminAuth()).send({ permission: 'EDIT' });
    expect(grant.status).toBeLessThan(300);
  });

  afterAll(async () => {
    await fg?.close();
    await mlflow?.close();
    await model?.close();
    if (fg) removeDir(fg.dir);
    removeDir(dir);
  });

  const host = () => `Host: 127.0.0.1:${port}`;

  describe('inference routes', () => {
    const predict = (extra: string[], path = '/models/iris/invocations') =>
      exchange(port, [`POST ${path} HTTP/1.1`, host(), 'Content-Type: application/json', ...extra], BODY);

    it.each([
      ['no key', [] as string[], '/models/iris/invocations'],
      ['a wrong key', ['x-api-key: wrong-key-0123456789abcdef'], '/models/iris/invocations'],
      ['a key for another model', [`x-api-key: ${IRIS_ONLY_KEY}`], '/models/iris/v1/models/other:predict'],
      ['a model-limited key on a path flowgate cannot attribute', [`x-api-key: ${IRIS_ONLY_KEY}`], '/models/iris/v2/repository/models/other/load'],
    ])('answers %s with 401 and no 100 Continue', async (_label, extra, path) => {
      const seen = model.seen.length;
      const r = await predict(extra, path);
      expect(statusOf(r.beforeBody)).toBe('401');
      expect(r.all).not.toContain('100 Continue');
      expect(r.all).toContain('"error_code":"UNAUTHENTICATED"');
      expect(model.seen.length).toBe(seen);
    });

    it('answers an allowed request with 100 Continue first, then the model answer', async () => {
      const seen = model.seen.length;
      const r = await predict([`x-api-key: ${KEY}`]);
      expect(r.beforeBody).toBe(CONTINUE);
      expect(statusOf(r.all.slice(CONTINUE.length))).toBe('200');
      expect(r.all).toContain('"predictions":[1]');
      expect(model.seen.slice(seen).map((q) => q.body)).toEqual([BODY]);
    });
  });

  describe('tracking routes', () => {
    const upload = (extra: string[], experiment: string) =>
      exchange(port, [`PUT /api/2.0/mlflow-artifacts/artifacts/${experiment}/run1/artifacts/x.bin HTTP/1.1`, host(), ...extra], 'artifact-bytes');

    it('answers a request without credentials with 401 and no 100 Continue', async () => {
      const r = await upload([], '7');
      expect(statusOf(r.beforeBody)).toBe('401');
      expect(r.all).not.toContain('100 Continue');
    });

    it('answers wrong credentials with 401 and no 100 Continue', async () => {
      const r = await upload([`Authorization: ${basic('bob', 'fgt_wrong-token-0123456789')}`], '7');
      expect(statusOf(r.beforeBody)).toBe('401');
      expect(r.all).not.toContain('100 Continue');
    });

    it('answers a denied request with 403 and no 100 Continue', async () => {
      const seen = mlflow.seen.length;
      const r = await upload([`Authorization: ${bob}`], '8');
      expect(statusOf(r.beforeBody)).toBe('403');
      expect(r.all).not.toContain('100 Continue');
      expect(mlflow.seen.length).toBe(seen);
    });

    it('sends no 100 Continue to a request whose decision needs its body, and still decides it once the body comes', async () => {
      const head = ['POST /api/2.0/mlflow/experiments/delete HTTP/1.1', host(), `Authorization: ${bob}`, 'Content-Type: application/json'];
      const r = await exchange(port, head, '{"experiment_id":"8"}');
      expect(r.beforeBody).toBe('');
      expect(statusOf(r.all)).toBe('403');
      expect(r.all).not.toContain('100 Continue');
    });

    it('answers an allowed upload with 100 Continue first, then forwards the body', async () => {
      const seen = mlflow.seen.length;
      const r = await upload([`Authorization: ${bob}`], '7');
      expect(r.beforeBody).toBe(CONTINUE);
      expect(statusOf(r.all.slice(CONTINUE.length))).toBe('200');
      expect(mlflow.seen.slice(seen).map((q) => q.body)).toEqual(['artifact-bytes']);
    });

    it('answers an allowed admin call with 100 Continue first', async () => {
      const head = ['POST /api/2.0/mlflow/runs/log-batch HTTP/1.1', host(), `Authorization: ${adminAuth()}`, 'Content-Type: application/json'];
      const r = await exchange(port, head, '{"run_id":"r1"}');
      expect(r.beforeBody).toBe(CONTINUE);
      expect(statusOf(r.all.slice(CONTINUE.length))).toBe('200');
    });
  });
});
