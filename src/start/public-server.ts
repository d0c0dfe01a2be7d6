import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerClientError } from '../http/client-error.js';
import { decideBeforeContinue } from '../http/expect-continue.js';

export interface PublicServer {
  readonly server: Server;
  /** `http://host:port` as it listens (the port chosen when 0 was asked for). */
  readonly url: string;
  /** Stops accepting, closes idle keep-alive connections, and resolves once the requests in flight are answered. */
  close(): Promise<void>;
}

/**
 * How long a client may take to send a request's line and headers (then 408, connection closed). Set
 * explicitly: with `requestTimeout: 0` Node derives 0 for it, which let a client that sends nothing, or
 * half a header, hold its connection forever, unauthenticated.
 */
export const HEADERS_TIMEOUT_MS = 60_000;

/** Shorter limits for tests: the connection check runs every `connectionsCheckingIntervalMs`. */
export interface ListenerTimeouts {
  readonly headersTimeoutMs?: number;
  readonly connectionsCheckingIntervalMs?: number;
}

/** The public listener: the request pipeline, `Expect: 100-continue` decided first, malformed requests answered. */
export async function listenPublic(listener: RequestListener, port: number, host: string, timeouts: ListenerTimeouts = {}): Promise<PublicServer> {
  // No limit on a whole request (a long upload takes what it takes); its headers have one.
  const server = createServer(
    {
      keepAliveTimeout: 65_000,
      requestTimeout: 0,
      headersTimeout: timeouts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS,
      ...(timeouts.connectionsCheckingIntervalMs !== undefined ? { connectionsCheckingInterval: timeouts.connectionsCheckingIntervalMs } : {}),
    },
    listener,
  );
  decideBeforeContinue(server, listener);
  server.on('clientError', answerClientError);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    server,
    url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
