import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

export interface MetricsServer {
  readonly server: Server;
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The metrics listener: its own port, never the public one, serving `GET /metrics` and nothing else.
 * A failed collection answers 500 without detail (collector errors are logged by the caller's hook).
 */
export async function startMetricsServer(
  registry: Registry,
  host: string,
  port: number,
  onError: (err: Error) => void = () => undefined,
): Promise<MetricsServer> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }).end('Method not allowed\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        res.writeHead(200, { 'Content-Type': registry.contentType, 'Cache-Control': 'no-store' });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        onError(err as Error);
        res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Metrics collection failed\n');
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  // Node's default, said here so it stays: a connection whose headers never finish is closed.
  server.headersTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}/metrics`;
  return {
    server,
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
