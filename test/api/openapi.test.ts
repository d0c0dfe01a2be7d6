import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { Validator } from '@seriousme/openapi-schema-validator';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/admin/openapi.js';
import { ADMIN_ROUTES, routePrefixes } from '../../src/admin/routes.js';
import { withScopedTwins } from '../../src/resources/kinds.js';
import { VERSION } from '../../src/version.js';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

type Doc = { paths: Record<string, Record<string, unknown>> };
type Op = {
  responses: Record<string, unknown>;
  parameters?: Array<{ name: string; in: string; required?: boolean }>;
  requestBody?: { required: boolean };
};

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

/**
 * Real calls, one or more per route family, in an order that makes what the later ones need: `op` is
 * the documented path below `/mlflow` (`{name}` filled from `params`, else from what `keep` kept), the
 * status is the one the route answers, `as` a user whose kept token makes the call.
 */
type Call = {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  op: string;
  api?: '3.0';
  params?: Record<string, string>;
  query?: Record<string, string | string[]> | ((state: Record<string, string>) => Record<string, string | string[]>);
  body?: unknown;
  as?: string;
  status: number;
  keep?: (body: Record<string, unknown>, state: Record<string, string>) => void;
};
const CALLS: Call[] = [
  // users
  { method: 'POST', op: '/users/create', body: { username: 'oa-user', display_name: 'OA user' }, status: 201 },
  { method: 'POST', op: '/users', body: { username: 'oa-sa', is_service_account: true }, status: 201 },
  { method: 'POST', op: '/users/create', body: { username: 'oa-basic', password: 'not-kept' }, status: 200 },
  { method: 'GET', op: '/users/get', query: { username: 'oa-user' }, status: 200 },
  { method: 'GET', op: '/users/list', status: 200 },
  { method: 'GET', op: '/permissions/users/{username}', params: { username: 'oa-user' }, status: 200 },
  { method: 'PATCH', op: '/permissions/users/{username}', params: { username: 'oa-user' }, body: { display_name: 'OA' }, status: 200 },
  { method: 'PATCH', op: '/permissions/users/{username}', params: { username: 'oa-user' }, status: 200 },
  { method: 'POST', op: '/permissions/users/{username}/disable', params: { username: 'oa-basic' }, status: 200 },
  { method: 'POST', op: '/permissions/users/{username}/enable', params: { username: 'oa-basic' }, status: 200 },
  // tokens and access keys
  { method: 'PATCH', op: '/permissions/users/access-token', body: { username: 'oa-user' }, status: 200, keep: (b, s) => (s['token:oa-user'] = String(b.token)) },
  { method: 'PATCH', op: '/permissions/users/access-token', as: 'oa-user', status: 200, keep: (b, s) => (s['token:oa-user'] = String(b.token)) },
  { method: 'PATCH', op: '/users/access-token', as: 'oa-user', status: 200, keep: (b, s) => (s['token:oa-user'] = String(b.token)) },
  { method: 'POST', op: '/permissions/users/{username}/access-keys', params: { username: 'oa-user' }, body: { name: 'laptop' }, status: 201 },
  { method: 'GET', op: '/permissions/users/{username}/access-keys', params: { username: 'oa-user' }, status: 200 },
  { method: 'POST', op: '/users/current/tokens', as: 'oa-user', body: { name: 'ci' }, status: 201 },
  { method: 'GET', op: '/users/{username}/tokens', params: { username: 'oa-user' }, status: 200 },
  // groups
  { method: 'POST', op: '/permissions/groups', body: { group_name: 'oa-team' }, status: 201 },
  { method: 'POST', op: '/permissions/groups/{group_name}/users', params: { group_name: 'oa-team' }, body: { username: 'oa-user' }, status: 201 },
  { method: 'GET', op: '/permissions/users/{username}/groups', params: { username: 'oa-user' }, status: 200 },
  // grants, a Skill of an organization's included
  { method: 'POST', op: '/permissions/users/{username}/experiments/{experiment_id}', params: { username: 'oa-user', experiment_id: '1' }, body: { permission: 'READ' }, status: 201 },
  { method: 'PATCH', op: '/permissions/users/{username}/experiments/{experiment_id}', params: { username: 'oa-user', experiment_id: '1' }, body: { permission: 'EDIT' }, status: 200 },
  { method: 'POST', op: '/permissions/users/{username}/skills/@{organization}/{name}', params: { username: 'oa-user', organization: 'acme', name: 'reviewer' }, body: { permission: 'READ' }, status: 201 },
  { method: 'GET', op: '/permissions/users/{username}/skills/@{organization}/{name}', params: { username: 'oa-user', organization: 'acme', name: 'reviewer' }, status: 200 },
  { method: 'POST', op: '/permissions/groups/{group_name}/skills/@{organization}/{name}', params: { group_name: 'oa-team', organization: 'acme', name: 'reviewer' }, body: { permission: 'EDIT' }, status: 201 },
  { method: 'GET', op: '/permissions/users/{username}/experiments', params: { username: 'oa-user' }, status: 200 },
  // pattern grants: 201 made, 200 changed
  { method: 'POST', op: '/permissions/users/{username}/patterns', params: { username: 'oa-user' }, body: { resource_type: 'experiment', pattern: 'oa-*', permission: 'READ' }, status: 201 },
  { method: 'POST', op: '/permissions/users/{username}/patterns', params: { username: 'oa-user' }, body: { resource_type: 'experiment', pattern: 'oa-*', permission: 'EDIT' }, status: 200 },
  { method: 'GET', op: '/permissions/patterns', query: { resource_type: 'experiment' }, status: 200 },
  { method: 'GET', op: '/permissions/users/{username}/patterns', params: { username: 'oa-user' }, query: { resource_type: 'experiment' }, status: 200 },
  { method: 'DELETE', op: '/permissions/users/{username}/patterns', params: { username: 'oa-user' }, query: { resource_type: 'experiment', pattern: 'oa-*' }, status: 200 },
  // MLflow basic-auth's roles and per-user permissions
  { method: 'POST', op: '/roles/create', api: '3.0', body: { workspace: 'default', name: 'oa-role' }, status: 200, keep: (b, s) => (s.role_id = String((b.role as { id: number }).id)) },
  { method: 'GET', op: '/roles/get', api: '3.0', query: (s) => ({ role_id: s.role_id! }), status: 200 },
  { method: 'GET', op: '/roles/list', api: '3.0', query: { workspace: ['default'] }, status: 200 },
  { method: 'POST', op: '/roles/assign', api: '3.0', body: { username: 'oa-user', role_id: 0 }, status: 400 },
  { method: 'GET', op: '/roles/permissions/list', api: '3.0', query: (s) => ({ role_id: s.role_id! }), status: 200 },
  { method: 'GET', op: '/roles/users/list', api: '3.0', query: (s) => ({ role_id: s.role_id! }), status: 200 },
  { method: 'GET', op: '/users/roles/list', api: '3.0', query: { username: 'oa-user' }, status: 200 },
  { method: 'GET', op: '/users/permissions/list', api: '3.0', query: { username: 'oa-user' }, status: 200 },
  { method: 'GET', op: '/users/permissions/get', api: '3.0', query: { username: 'oa-user', resource_type: 'experiment', resource_id: '1' }, status: 200 },
  // explain, audit, the screens' lists
  { method: 'GET', op: '/permissions/explain', query: { username: 'oa-user', method: 'GET', path: '/api/2.0/mlflow/experiments/get?experiment_id=1' }, status: 200 },
  { method: 'GET', op: '/permissions/audit', query: { max_results: '5' }, status: 200 },
  { method: 'GET', op: '/permissions/ui/audit', query: { actor: 'admin', max_results: '5' }, status: 200 },
  { method: 'GET', op: '/permissions/ui/users', query: { q: 'oa', type: 'user' }, status: 200 },
  { method: 'GET', op: '/permissions/ui/groups', query: { q: 'oa' }, status: 200 },
  { method: 'GET', op: '/permissions/ui/experiments/{experiment_id}/grants', params: { experiment_id: '1' }, query: { q: 'oa' }, status: 200 },
  { method: 'GET', op: '/permissions/ui/experiments/{experiment_id}/effective', params: { experiment_id: '1' }, query: { username: 'oa-user' }, status: 200 },
  { method: 'GET', op: '/permissions/ui/my-permissions/experiments', as: 'oa-user', query: { id: ['1', '2'] }, status: 200 },
  // batch, prune (no body: not a dry run), and removal
  { method: 'POST', op: '/permissions/batch', body: { calls: [{ method: 'POST', path: 'permissions/groups', body: { group_name: 'oa-batch' } }] }, status: 200 },
  { method: 'POST', op: '/permissions/grants/prune', status: 200 },
  { method: 'DELETE', op: '/permissions/users/{username}', params: { username: 'oa-basic' }, status: 200 },
];

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

  it("describes every admin route, a Skill's @{organization} twin paths included", () => {
    for (const route of ADMIN_ROUTES)
      for (const prefix of routePrefixes(route))
        for (const routePath of withScopedTwins(route.path)) {
          const path = (prefix + routePath).replace(/:([A-Za-z_]+)/g, '{$1}');
          expect(committed.paths[path]?.[route.method.toLowerCase()], `${route.method} ${path}`).toBeDefined();
        }
    expect(committed.paths['/api/2.0/mlflow/permissions/users/{username}/skills/@{organization}/{name}']?.post).toBeDefined();
  });

  it('describes only routes that exist on the running server, with the statuses and required query parameters they answer with', async () => {
    for (const [path, ops] of Object.entries(committed.paths))
      for (const [method, op] of Object.entries(ops as Record<string, Op>)) {
        const what = `${method.toUpperCase()} ${path}`;
        const concrete = path
          .replace('{experiment_id}', '1')
          .replace(/\{[a-z_]+\}/g, 'nobody');
        const res = await request(fg.url)
          [method as 'get'](concrete)
          .set('Authorization', adminAuth())
          .send(method === 'get' || method === 'delete' ? undefined : {});
        expect(res.body.error_code, what).not.toBe('ENDPOINT_NOT_FOUND');
        expect(res.status, what).not.toBe(405);
        expect(Object.keys(op.responses), `${what} answered ${res.status} ${JSON.stringify(res.body)}`).toContain(String(res.status));
        // Called without a query: a required parameter the document declares is what the 400 is about, and a 400 about the query is one it declares.
        const required = (op.parameters ?? []).filter((p) => p.in === 'query' && p.required);
        const aboutQuery = res.status === 400 && /query/i.test(String(res.body.message));
        expect(aboutQuery, `${what}: ${res.status} ${JSON.stringify(res.body)} with required query parameters ${JSON.stringify(required.map((p) => p.name))}`).toBe(
          required.length > 0,
        );
      }
  });

  it('says a body is required exactly where the route refuses a call without one', async () => {
    const optional: string[] = [];
    for (const [path, ops] of Object.entries(committed.paths))
      for (const [method, op] of Object.entries(ops as Record<string, Op>)) {
        if (!op.requestBody) continue;
        if (!op.requestBody.required) {
          optional.push(`${method.toUpperCase()} ${path}`);
          continue;
        }
        const concrete = path.replace('{experiment_id}', '1').replace(/\{[a-z_]+\}/g, 'nobody');
        const res = await request(fg.url)[method as 'post'](concrete).set('Authorization', adminAuth());
        expect([res.status, res.body.message], `${method.toUpperCase()} ${path}`).toEqual([400, expect.stringMatching(/^Missing request body/)]);
      }
    // Each one the document says takes no body is called without one by the calls below (it answers its success).
    const calledBare = new Set(
      CALLS.filter((c) => c.method !== 'GET' && c.method !== 'DELETE' && c.body === undefined).flatMap((c) =>
        (c.api === '3.0' ? ['/api/3.0', '/ajax-api/3.0'] : ['/api/2.0', '/ajax-api/2.0']).map((prefix) => `${c.method} ${prefix}/mlflow${c.op}`),
      ),
    );
    expect(optional.filter((o) => !calledBare.has(o))).toEqual([]);
    expect(optional).toContain('PATCH /api/2.0/mlflow/permissions/users/access-token');
    expect(optional).toContain('POST /api/2.0/mlflow/permissions/grants/prune');
  });

  it('lists the status each route family answers a real call with, and declares the query parameters it reads (required where leaving one out is a 400)', async () => {
    const state: Record<string, string> = {};
    for (const c of CALLS) {
      const template = `${c.api === '3.0' ? '/api/3.0' : '/api/2.0'}/mlflow${c.op}`;
      const what = `${c.method} ${template}`;
      const op = (committed.paths[template] as Record<string, Op> | undefined)?.[c.method.toLowerCase()];
      expect(op, what).toBeDefined();
      const path = template.replace(/\{([a-z_]+)\}/g, (_m, name: string) => encodeURIComponent(c.params?.[name] ?? state[name]!));
      const query = Object.entries(typeof c.query === 'function' ? c.query(state) : (c.query ?? {}));
      const send = async (entries: [string, string | string[]][]) => {
        const search = new URLSearchParams();
        for (const [k, v] of entries) for (const one of [v].flat()) search.append(k, one);
        const target = search.size ? `${path}?${search}` : path;
        const auth = c.as ? basic(c.as, state[`token:${c.as}`]!) : adminAuth();
        return request(fg.url)[c.method.toLowerCase() as 'post'](target).set('Authorization', auth).send(c.body as object);
      };
      const declared = new Map((op!.parameters ?? []).filter((p) => p.in === 'query').map((p) => [p.name, p.required === true]));
      for (const [name] of query) {
        expect(declared.has(name), `${what} reads ?${name}, which the document does not declare`).toBe(true);
        // Left out (before the real call, so a removal is still there to make): a 400 exactly when the document says it is required.
        const without = await send(query.filter(([n]) => n !== name));
        expect(without.status === 400, `${what} without ?${name}: ${without.status} ${JSON.stringify(without.body)}`).toBe(declared.get(name));
      }
      const res = await send(query);
      expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(c.status);
      expect(Object.keys(op!.responses), what).toContain(String(res.status));
      c.keep?.(res.body, state);
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
