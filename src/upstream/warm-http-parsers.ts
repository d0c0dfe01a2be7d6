import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from 'undici';

/**
 * Parses one answer with each HTTP client flowgate uses — undici's (its calls to MLflow) and Node's
 * `fetch` (the OpenID Provider's) — before the policy is loaded. Both parse with llhttp compiled to
 * WebAssembly, and on Node 20 V8 optimizes that code shortly after its first use, with ~30 MB of
 * memory for ~80 ms. Done first, that lands while the process is small, instead of on top of a loaded
 * policy index, where it set the process's peak RSS (docs/performance.md, "Memory").
 *
 * Over loopback, to a server of its own that lives for these two requests. A warm-up that cannot run
 * costs only that memory later, so it never stops a start.
 */
export async function warmHttpParsers(): Promise<void> {
  const server = createServer((_req, res) => res.end());
  try {
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const client = new Client(origin);
    try {
      await (await client.request({ method: 'GET', path: '/' })).body.dump();
    } finally {
      await client.close();
    }
    await (await fetch(origin, { headers: { connection: 'close' } })).arrayBuffer();
  } catch {
    // Memory only: see above.
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
