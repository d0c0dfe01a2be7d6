import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwarderFor } from '../helpers/mlflow-connection.js';

// A full collection on demand, without starting the test process with --expose-gc.
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

const listen = async (server: ReturnType<typeof createServer>) => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

describe('forwarder', () => {
  const upstream = createServer((_req, res) => res.end('{"ok":true}'));
  let forwarder: ReturnType<typeof forwarderFor>;
  let front: ReturnType<typeof createServer>;
  let frontUrl: string;
  /** Requests kept alive after their answer, as Node keeps a keep-alive connection's last request. */
  const kept: IncomingMessage[] = [];
  let marker: WeakRef<object> | undefined;
  const seen: number[] = [];

  beforeAll(async () => {
    forwarder = forwarderFor(await listen(upstream));
    front = createServer((req, res) => {
      kept.push(req);
      // Something large the callbacks hold, as the request's scope and response are held in flowgate.
      const scope = { payload: Buffer.alloc(1024 * 1024) };
      marker = new WeakRef(scope);
      forwarder.forward(req, res, {
        encodedPath: '/api/2.0/mlflow/experiments/get',
        search: '',
        username: 'alice',
        requestId: 'r1',
        onUpstream: (status) => seen.push(scope.payload.length > 0 ? status : -1),
      });
    });
    frontUrl = await listen(front);
  });
  afterAll(async () => {
    await forwarder.close();
    front.close();
    upstream.close();
  });

  it("lets go of a request's callbacks once MLflow answered, though the request itself lives on", async () => {
    const res = await fetch(`${frontUrl}/x`);
    expect(await res.json()).toEqual({ ok: true });
    expect(seen).toEqual([200]);
    expect(kept).toHaveLength(1);
    // Let the response's own clean-up run, then collect: only the forwarder could still hold the scope.
    await new Promise((r) => setTimeout(r, 50));
    collectGarbage();
    expect(marker?.deref()).toBeUndefined();
  });
});
