import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMlflowLookups, lookupPathFor } from '../../src/authz/mlflow-lookups.js';
import { upstreamJsonFor } from '../helpers/mlflow-connection.js';

/*
 * MLflow under `--static-prefix /prefix`: before 3.12 it serves `/api/` at its root and only
 * `/ajax-api/` under the prefix; from 3.12 on both are under the prefix. The stand-in answers a run
 * look-up only where the release it plays serves it.
 */
let server: Server;
let baseUrl: string;
let servesApiUnderPrefix = false;
const hits: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    hits.push(url.pathname);
    const served = servesApiUnderPrefix
      ? ['/prefix/api/2.0/mlflow/runs/get', '/prefix/ajax-api/2.0/mlflow/runs/get']
      : ['/api/2.0/mlflow/runs/get', '/prefix/ajax-api/2.0/mlflow/runs/get'];
    if (!served.includes(url.pathname)) {
      res.writeHead(404, { 'content-type': 'text/html' });
      return res.end('<h1>Not Found</h1>');
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ run: { info: { run_id: 'r1', experiment_id: '7' } } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => server.close(r));
});

describe('lookupPathFor', () => {
  it('asks the /ajax-api/ twin before 3.12, where /api/ is not under the static prefix', () => {
    for (const version of ['3.0.1', '3.9.0', '3.11.1']) {
      expect(lookupPathFor(version, '/mlflow')('/api/2.0/mlflow/runs/get')).toBe('/ajax-api/2.0/mlflow/runs/get');
      // Without a prefix `/api/` is at the root, where it always was.
      expect(lookupPathFor(version, '')('/api/2.0/mlflow/runs/get')).toBe('/api/2.0/mlflow/runs/get');
    }
  });

  it('keeps /api/ from 3.12 on and when the version is unknown', () => {
    for (const version of ['3.12.0', '3.14.0', '3.17.2', '3.18.0', '4.0.0', undefined]) {
      expect(lookupPathFor(version, '/mlflow')('/api/3.0/mlflow/traces/tr-1')).toBe('/api/3.0/mlflow/traces/tr-1');
    }
  });
});

describe('a look-up through a static prefix', () => {
  async function experimentOfRun(version: string) {
    const client = upstreamJsonFor(baseUrl, '/prefix');
    try {
      return await createMlflowLookups({ client, cacheSize: 10, ttlMs: 0, mlflowVersion: version, staticPrefix: '/prefix' }).experimentOfRun('r1');
    } finally {
      await client.close();
    }
  }

  it('reaches MLflow 3.11 under its prefix', async () => {
    servesApiUnderPrefix = false;
    hits.length = 0;
    expect(await experimentOfRun('3.11.1')).toBe('7');
    expect(hits).toEqual(['/prefix/ajax-api/2.0/mlflow/runs/get']);
  });

  it('reaches MLflow 3.17 at /api/ under its prefix', async () => {
    servesApiUnderPrefix = true;
    hits.length = 0;
    expect(await experimentOfRun('3.17.2')).toBe('7');
    expect(hits).toEqual(['/prefix/api/2.0/mlflow/runs/get']);
  });
});
