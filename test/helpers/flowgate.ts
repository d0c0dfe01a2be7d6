import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig, type Env } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { startFlowgate, type Flowgate } from '../../src/main.js';
import { storeSettings } from './test-store.js';

export const ADMIN = { username: 'admin', token: 'admin-token-0123456789abcdef0123456789abcdef' };

export function basic(username: string, token: string): string {
  return `Basic ${Buffer.from(`${username}:${token}`).toString('base64')}`;
}
export const adminAuth = () => basic(ADMIN.username, ADMIN.token);

export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
}

/** A fixed-answer HTTP server standing in for MLflow where a test is about flowgate alone. */
export async function startStubUpstream(
  answer: (req: SeenRequest) => { status: number; body: unknown } = () => ({ status: 200, body: { ok: true } }),
): Promise<{ url: string; seen: SeenRequest[]; server: Server; close(): Promise<void> }> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() };
      seen.push(r);
      const a = answer(r);
      const payload = JSON.stringify(a.body);
      res.writeHead(a.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) });
      res.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface TestFlowgate extends Flowgate {
  readonly dir: string;
  readonly logs: string[];
  /** Stops this instance and starts a new one on the same store. */
  restart(): Promise<TestFlowgate>;
}

/** A synchronous log destination whose lines tests can search (for secrets that must not be there). */
export function logCapture(): { logs: string[]; sink: Writable } {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  return { logs, sink };
}

/** flowgate in-process on a free loopback port, with its own temporary store and captured logs. */
export async function startTestFlowgate(env: Env = {}, dir = mkdtempSync(join(tmpdir(), 'flowgate-'))): Promise<TestFlowgate> {
  const { logs, sink } = logCapture();
  const config = loadConfig({
    FLOWGATE_HOST: '127.0.0.1',
    FLOWGATE_PORT: '0',
    FLOWGATE_METRICS_PORT: '0',
    FLOWGATE_METRICS_HOST: '127.0.0.1',
    ...(await storeSettings(dir)),
    FLOWGATE_ADMIN_USERNAME: ADMIN.username,
    FLOWGATE_ADMIN_TOKEN: ADMIN.token,
    FLOWGATE_LOG_LEVEL: 'info',
    ...env,
  });
  const fg = await startFlowgate(config, { logger: createLogger(config.logLevel, sink) });
  const self: TestFlowgate = {
    ...fg,
    dir,
    logs,
    async restart() {
      await fg.close();
      return startTestFlowgate(env, dir);
    },
    async close() {
      await fg.close();
    },
  };
  return self;
}

export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
