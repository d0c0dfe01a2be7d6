import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Validator } from '@seriousme/openapi-schema-validator';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/admin/openapi.js';
import { ADMIN_ROUTES, routePrefixes } from '../../src/admin/routes.js';
import { VERSION } from '../../src/version.js';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

type Doc = { paths: Record<string, Record<string, unknown>> };

/** fetch refuses TRACE; node:http sends it. */
function traceCall(url: string, authorization: string): Promise<{ status: number; allow: unknown; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'TRACE', headers: { Authorization: authorization } }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
const committed = JSON.parse(readFileSync(new URL('../../openapi/admin-api.json', import.meta.url), 'utf8')) as Doc;

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

describe('OpenAPI description of the admin API', () => {
  it('is valid OpenAPI 3.1', async () => {
    const result = await new Validator().validate(committed as unknown as Parameters<Validator["validate"]>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect((committed as unknown as { openapi: string }).openapi).toBe('3.1.0');
  });

  it('in the repo is the one flowgate serves and builds from its route table (run `npm run openapi` after changing routes)', async () => {
    const served = await request(fg.url).get('/flowgate/openapi.json');
    expect(served.status).toBe(200);
    expect(served.body.paths).toEqual(committed.paths);
    expect(buildOpenApi(ADMIN_ROUTES, VERSION).paths).toEqual(committed.paths);
  });

  it('describes every admin route', () => {
    for (const route of ADMIN_ROUTES)
      for (const prefix of routePrefixes(route)) {
        const path = (prefix + route.path).replace(/:([A-Za-z_]+)/g, '{$1}');
        expect(committed.paths[path]?.[route.method.toLowerCase()], `${route.method} ${path}`).toBeDefined();
      }
  });

  it('describes only routes that exist on the running server', async () => {
    for (const [path, ops] of Object.entries(committed.paths))
      for (const method of Object.keys(ops)) {
        const concrete = path
          .replace('{experiment_id}', '1')
          .replace(/\{[a-z_]+\}/g, 'nobody');
        const res = await request(fg.url)
          [method as 'get'](concrete)
          .set('Authorization', adminAuth())
          .send(method === 'get' || method === 'delete' ? undefined : {});
        expect(res.body.error_code, `${method.toUpperCase()} ${path}`).not.toBe('ENDPOINT_NOT_FOUND');
        expect(res.status, `${method.toUpperCase()} ${path}`).not.toBe(405);
      }
  });

  it('lists 503 on every operation, and a method a path does not serve (TRACE) is the 405 it describes, with Allow', async () => {
    for (const ops of Object.values(committed.paths))
      for (const op of Object.values(ops)) expect(Object.keys((op as { responses: object }).responses)).toContain('503');
    expect((committed as unknown as { info: { description: string } }).info.description).toContain('405 METHOD_NOT_ALLOWED');
    for (const [path, ops] of Object.entries(committed.paths)) {
      const concrete = path.replace('{experiment_id}', '1').replace(/\{[a-z_]+\}/g, 'nobody');
      const res = await traceCall(fg.url + concrete, adminAuth());
      expect(res.status, `TRACE ${path}`).toBe(405);
      expect(JSON.parse(res.body)).toMatchObject({ error_code: 'METHOD_NOT_ALLOWED' });
      const allowed = String(res.allow).split(', ');
      for (const method of Object.keys(ops)) expect(allowed, `TRACE ${path}`).toContain(method.toUpperCase());
    }
  });
});
