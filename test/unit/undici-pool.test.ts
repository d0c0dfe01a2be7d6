import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import * as undici from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Pool } from '../../src/upstream/undici-pool.js';

const SRC = new URL('../../src/', import.meta.url).pathname;
const sources = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );

describe("undici's pool", () => {
  const server = createServer((req, res) => {
    req.resume();
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ path: req.url }));
  });
  beforeAll(() => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)));
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("is the class of undici's public export", () => {
    expect(Pool).toBe(undici.Pool);
  });

  it('dispatches a call to a loopback server with a raw handler, as the forwarder does', async () => {
    const pool = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      let status = 0;
      const chunks: Buffer[] = [];
      pool.dispatch(
        { path: '/api/2.0/mlflow/runs/get?run_id=1', method: 'GET' },
        {
          onConnect: () => undefined,
          onHeaders: (code) => ((status = code), true),
          onData: (chunk) => (chunks.push(chunk), true),
          onComplete: () => resolve({ status, body: Buffer.concat(chunks).toString() }),
          onError: reject,
        },
      );
    });
    await pool.close();
    expect(answer).toEqual({ status: 200, body: JSON.stringify({ path: '/api/2.0/mlflow/runs/get?run_id=1' }) });
  });

  it("no source file loads a package's private files (a path under the package, not its exports)", () => {
    // A quoted bare specifier reaching into a package's lib/, src/, dist/ … (relative paths start with '.').
    const deep = /['"](?:@[\w-][\w.-]*\/)?[\w-][\w.-]*\/(?:lib|src|dist|build|internal)\/[^'"]*['"]/;
    const offenders = sources(SRC).filter((file) => deep.test(readFileSync(file, 'utf8')));
    expect(offenders).toEqual([]);
  });
});
