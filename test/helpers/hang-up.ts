import { createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the stub MLflow answers a request: a JSON body, after `delayMs` (a slow change). */
export interface SlowAnswer {
  readonly status?: number;
  readonly body: unknown;
  readonly delayMs?: number;
}

/**
 * A stub MLflow answering by path (query left off) with JSON, some answers late: time for a client to
 * send its request and go away before MLflow has answered. `/version` is answered as MLflow 3.17.2.
 */
export async function startSlowMlflow(answer: (path: string, body: string, method: string) => SlowAnswer | undefined) {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      seen.push(`${req.method} ${path}`);
      const a: SlowAnswer = path === '/version' ? { body: '3.17.2' } : (answer(path, Buffer.concat(chunks).toString(), req.method ?? '') ?? { body: {} });
      const send = () => {
        const payload = JSON.stringify(a.body);
        res.writeHead(a.status ?? 200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) });
        res.end(payload);
      };
      if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * Sends a JSON request and goes away `afterMs` later, before MLflow answers (a client timeout, a closed
 * tab, a killed script); with `afterMs` undefined it stays for the answer.
 */
export function sendJson(url: string, method: string, body: unknown, auth: string, afterMs?: number): Promise<void> {
  return new Promise((resolve) => {
    const target = new URL(url);
    const payload = JSON.stringify(body);
    const req = httpRequest({
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method,
      headers: { Authorization: auth, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) },
    });
    req.on('error', () => resolve());
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.end(payload);
    if (afterMs !== undefined)
      setTimeout(() => {
        req.destroy();
        resolve();
      }, afterMs);
  });
}
