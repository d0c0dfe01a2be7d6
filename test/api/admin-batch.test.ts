import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { MAX_BATCH_BODY_BYTES, MAX_BATCH_CALLS } from '../../src/admin/batch.js';
import { runPolicy } from '../../src/commands/policy.js';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const batch = (calls: unknown[], auth = adminAuth()) => request(fg.url).post('/api/2.0/mlflow/permissions/batch').set('Authorization', auth).send({ calls });
const count = async (table: string) => ((await fg.store.sql.get(`SELECT count(*) AS n FROM ${table}`)) as { n: number }).n;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

describe('POST permissions/batch (several admin changes, all or none)', () => {
  it('applies every call in order, each checked like a request of its own', async () => {
    const res = await batch([
      { method: 'POST', path: 'users/create', body: { username: 'bea' } },
      { method: 'POST', path: 'permissions/groups', body: { group_name: 'team-b' } },
      { method: 'POST', path: 'permissions/groups/team-b/users', body: { username: 'bea' } },
      { method: 'POST', path: 'permissions/groups/team-b/experiments/7', body: { permission: 'EDIT' } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.results).toHaveLength(4);
    const grant = await request(fg.url).get('/api/2.0/mlflow/permissions/groups/team-b/experiments/7').set('Authorization', adminAuth());
    expect(grant.body.permission.permission).toBe('EDIT');
  });

  it('changes nothing, audit log included, when one call is refused, and says which', async () => {
    const before = { users: await count('users'), groups: await count('groups'), grants: await count('grants'), audit: await count('audit_log') };
    const res = await batch([
      { method: 'POST', path: 'users/create', body: { username: 'cleo' } },
      { method: 'POST', path: 'permissions/users/cleo/experiments/8', body: { permission: 'READ' } },
      { method: 'POST', path: 'permissions/users/nobody-here/experiments/8', body: { permission: 'READ' } },
    ]);
    expect(res.status).toBe(404);
    expect(res.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
    expect(res.body.message).toMatch(/^Call 2: User 'nobody-here'/);
    expect({ users: await count('users'), groups: await count('groups'), grants: await count('grants'), audit: await count('audit_log') }).toEqual(before);
    // Nothing written and undone stayed in memory: cleo cannot be found and holds nothing.
    expect((await request(fg.url).get('/api/2.0/mlflow/permissions/users/cleo').set('Authorization', adminAuth())).status).toBe(404);
  });

  it('refuses unknown endpoints, nested batches and bad bodies by position, and non-admins', async () => {
    expect((await batch([{ method: 'POST', path: 'permissions/nowhere', body: {} }])).body.message).toMatch(/^Call 0: no admin endpoint/);
    expect((await batch([{ method: 'POST', path: 'permissions/batch', body: { calls: [] } }])).status).toBe(400);
    const bad = await batch([{ method: 'POST', path: 'permissions/groups/team-b/experiments/9', body: { permission: 'WRITE' } }]);
    expect(bad.status).toBe(400);
    await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'dana' });
    const token = (
      await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'dana' })
    ).body.token as string;
    expect((await batch([{ method: 'POST', path: 'permissions/groups', body: { group_name: 'x' } }], basic('dana', token))).status).toBe(403);
  });
});

describe("a batch call's path is read as a request's is", () => {
  const state = async () => ({ groups: await count('groups'), grants: await count('grants'), audit: await count('audit_log') });

  it.each([
    ['permissions/groups/../experiments/8', /no '\.' or '\.\.' path segments/],
    ['permissions/groups/./experiments/8', /no '\.' or '\.\.' path segments/],
    ['permissions/groups/%2e%2e/experiments/8', /no '\.' or '\.\.' path segments/],
    ['permissions/groups/%2E/experiments/8', /no '\.' or '\.\.' path segments/],
    ['permissions/groups\\..\\experiments/8', /no '\.' or '\.\.' path segments/],
    ['permissions/groups/%zz/experiments/8', /malformed percent-encoding/],
    ['permissions/groups/%E0%A4%A/experiments/8', /malformed percent-encoding/],
    ['permissions/groups/%252e%252e/experiments/8', /encoded more than once/],
  ])('%s is refused (400), the whole batch with it', async (path, message) => {
    const before = await state();
    const res = await batch([
      { method: 'POST', path: 'permissions/groups/dots-ok/experiments/8', body: { permission: 'READ' } },
      { method: 'POST', path, body: { permission: 'READ' } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(res.body.message).toMatch(/^Call 1: /);
    expect(res.body.message).toMatch(message);
    expect(await state()).toEqual(before);
    expect(await fg.store.sql.get("SELECT id FROM groups WHERE name IN ('..', '.', 'dots-ok', '%2e%2e')")).toBeUndefined();
  });

  it('a name holding an encoded / or a dot is still one segment', async () => {
    const res = await batch([{ method: 'POST', path: 'permissions/groups/team.a%2Fb/experiments/8', body: { permission: 'READ' } }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const grant = await request(fg.url).get('/api/2.0/mlflow/permissions/groups/team.a%2Fb/experiments/8').set('Authorization', adminAuth());
    expect(grant.body.permission.permission).toBe('READ');
  });
});

describe('grants/prune is not a batch call', () => {
  it("is refused (400) before anything is written or MLflow is asked: it would hold the batch's transaction over every look-up", async () => {
    await request(fg.url).post('/api/2.0/mlflow/permissions/groups/g-prune/registered-models/m-1').set('Authorization', adminAuth()).send({ permission: 'READ' }).expect(201);
    const asked = upstream.seen.length;
    const before = { groups: await count('groups'), grants: await count('grants'), audit: await count('audit_log') };
    const res = await batch([
      { method: 'POST', path: 'permissions/groups/g-prune/experiments/9', body: { permission: 'READ' } },
      { method: 'POST', path: 'permissions/grants/prune', body: { dry_run: true } },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(res.body.message).toMatch(/^Call 1: POST permissions\/grants\/prune cannot be batched: .*call it on its own/);
    expect({ groups: await count('groups'), grants: await count('grants'), audit: await count('audit_log') }).toEqual(before);
    expect(upstream.seen.length).toBe(asked);
    // On its own it is served.
    const alone = await request(fg.url).post('/api/2.0/mlflow/permissions/grants/prune').set('Authorization', adminAuth()).send({ dry_run: true });
    expect(alone.status, alone.text).toBe(200);
  });
});

describe("a batch call's workspace, MLflow running without workspaces", () => {
  it("refuses any but 'default' (400, nothing written): its grant would be kept under a workspace nothing lists", async () => {
    const before = { grants: await count('grants'), audit: await count('audit_log') };
    const res = await batch([
      { method: 'POST', path: 'permissions/groups/team-b/experiments/21', body: { permission: 'READ' }, workspace: 'default' },
      { method: 'POST', path: 'permissions/groups/team-b/experiments/7', body: { permission: 'READ' }, workspace: 'ws-zzz' },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(400);
    expect(res.body.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(res.body.message).toBe("Call 1: 'workspace' is 'ws-zzz', but the tracking server runs without workspaces: a call can only act in 'default' (or name none)");
    expect({ grants: await count('grants'), audit: await count('audit_log') }).toEqual(before);
    expect(await fg.store.sql.get("SELECT resource_id FROM grants WHERE resource_id LIKE 'ws-zzz%'")).toBeUndefined();
  });

  it("takes 'default'", async () => {
    const res = await batch([{ method: 'POST', path: 'permissions/groups/team-b/experiments/22', body: { permission: 'READ' }, workspace: 'default' }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
});

describe("a batch call's workspace, MLflow running with workspaces", () => {
  const workspaces = new Set(['default', 'ws-a']);
  const missing = { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'not found' } };
  let wsUpstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let wsFg: TestFlowgate;
  const wsBatch = (calls: unknown[]) => request(wsFg.url).post('/api/2.0/mlflow/permissions/batch').set('Authorization', adminAuth()).send({ calls });
  const grantIn = (workspace: string) =>
    request(wsFg.url).get('/api/2.0/mlflow/permissions/users/alice/registered-models/secret-model').set('Authorization', adminAuth()).set('X-MLFLOW-WORKSPACE', workspace);

  beforeAll(async () => {
    wsUpstream = await startStubUpstream((req: SeenRequest) => {
      const url = new URL(req.url, 'http://mlflow');
      if (url.pathname === '/api/3.0/mlflow/server-info') return { status: 200, body: { workspaces_enabled: true } };
      if (url.pathname === '/api/3.0/mlflow/workspaces') return { status: 200, body: { workspaces: [...workspaces].map((name) => ({ name })) } };
      const one = /^\/api\/3\.0\/mlflow\/workspaces\/([^/]+)$/.exec(url.pathname);
      if (one) return workspaces.has(one[1]!) ? { status: 200, body: { workspace: { name: one[1] } } } : missing;
      if (url.pathname.endsWith('/registered-models/get')) return { status: 200, body: { registered_model: { name: url.searchParams.get('name') } } };
      return { status: 200, body: {} };
    });
    wsFg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: wsUpstream.url });
    await request(wsFg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'alice' }).expect(201);
  });
  afterAll(async () => {
    await wsFg?.close();
    await wsUpstream?.close();
    if (wsFg) removeDir(wsFg.dir);
  });

  it("refuses a workspace MLflow does not have as the header is refused (404, nothing written), and no grant waits for one of that name", async () => {
    const direct = await grantIn('ws-later');
    expect(direct.status).toBe(404);
    const grants = async () => ((await wsFg.store.sql.get('SELECT count(*) AS n FROM grants')) as { n: number }).n;
    const before = await grants();
    const res = await wsBatch([
      { method: 'POST', path: 'permissions/users/alice/registered-models/secret-model', body: { permission: 'READ' }, workspace: 'ws-a' },
      { method: 'POST', path: 'permissions/users/alice/registered-models/secret-model', body: { permission: 'MANAGE' }, workspace: 'ws-later' },
    ]);
    expect(res.status, JSON.stringify(res.body)).toBe(404);
    expect(res.body).toEqual({ error_code: 'RESOURCE_DOES_NOT_EXIST', message: "Call 1: Workspace 'ws-later' not found" });
    expect(await grants()).toBe(before);
    expect((await grantIn('ws-a')).status).toBe(404);
    // A workspace of that name made later holds nothing the batch sent.
    workspaces.add('ws-later');
    try {
      expect((await grantIn('ws-later')).status).toBe(404);
    } finally {
      workspaces.delete('ws-later');
    }
  });

  it('makes the grant in a workspace MLflow has, where its listing shows it', async () => {
    const res = await wsBatch([{ method: 'POST', path: 'permissions/users/alice/registered-models/secret-model', body: { permission: 'READ' }, workspace: 'ws-a' }]);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const listed = await request(wsFg.url).get('/api/2.0/mlflow/permissions/users/alice/registered-models').set('Authorization', adminAuth()).set('X-MLFLOW-WORKSPACE', 'ws-a');
    expect(JSON.stringify(listed.body)).toContain('secret-model');
    expect((await grantIn('default')).status).toBe(404);
  });
});

describe('the size of a batch', () => {
  it('reads a batch of MAX_BATCH_CALLS ordinary grants (as policy apply sends a diff), over the 1 MiB other routes read', async () => {
    const calls = Array.from({ length: MAX_BATCH_CALLS }, (_, i) => ({
      method: 'POST',
      path: `permissions/groups/team-${i % 50}/registered-models/model-${i}`,
      body: { permission: 'READ' },
      workspace: 'default',
    }));
    const body = JSON.stringify({ calls });
    expect(Buffer.byteLength(body)).toBeGreaterThan(1024 * 1024);
    const res = await request(fg.url).post('/api/2.0/mlflow/permissions/batch').set('Authorization', adminAuth()).set('Content-Type', 'application/json').send(body);
    expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200);
    expect(res.body.results).toHaveLength(MAX_BATCH_CALLS);
  }, 30_000);

  it('refuses one call more (400, saying the limit), and a body over its own limit (413); other routes keep FLOWGATE_MAX_BODY_BYTES', async () => {
    const one = { method: 'POST', path: 'permissions/groups/team-z/experiments/1', body: { permission: 'READ' } };
    const tooMany = await batch(Array.from({ length: MAX_BATCH_CALLS + 1 }, () => one));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toMatch(`at most ${MAX_BATCH_CALLS} calls`);
    const padded = JSON.stringify({ calls: [{ ...one, body: { permission: 'READ', pad: 'x'.repeat(MAX_BATCH_BODY_BYTES) } }] });
    const tooLarge = await request(fg.url).post('/api/2.0/mlflow/permissions/batch').set('Authorization', adminAuth()).set('Content-Type', 'application/json').send(padded);
    expect(tooLarge.status).toBe(413);
    const other = await request(fg.url)
      .post('/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ username: 'big', display_name: 'x'.repeat(1024 * 1024 + 1) }));
    expect(other.status).toBe(413);
  }, 30_000);
});

describe('policy apply and the batch limit', () => {
  afterEach(() => vi.unstubAllGlobals());
  const run = async (file: string, batchAnswer: () => Response) => {
    const posted: unknown[] = [];
    vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
      const path = new URL(url).pathname;
      const json = (v: unknown) => new Response(JSON.stringify(v), { status: 200, headers: { 'Content-Type': 'application/json' } });
      if (path.endsWith('/permissions/batch')) {
        posted.push(init.body);
        return batchAnswer();
      }
      if (path.endsWith('/permissions/users'))
        return json({ users: [{ username: 'admin', display_name: 'admin', is_admin: true, is_service_account: false, sign_in: 'local', bootstrap: true }] });
      if (path.endsWith('/permissions/groups')) return json({ groups: [] });
      if (path.endsWith('/permissions/patterns')) return json({ patterns: [] });
      return json({ permissions: [] });
    });
    const seen = { out: '', err: '' };
    const io = {
      out: (t: string) => void (seen.out += t),
      err: (t: string) => void (seen.err += t),
      readFile: async () => file,
      env: { MLFLOW_TRACKING_URI: 'https://flowgate.example', MLFLOW_TRACKING_USERNAME: 'admin', MLFLOW_TRACKING_PASSWORD: 'x' },
    };
    const code = await runPolicy(['apply', 'team.yaml'], io as never);
    return { code, posted, ...seen };
  };
  const users = (n: number) => `version: 1\nusers:\n${Array.from({ length: n }, (_, i) => `  - username: u${i}\n`).join('')}`;

  it('says so, sending nothing, when its diff takes more calls than a batch holds', async () => {
    const r = await run(users(MAX_BATCH_CALLS + 1), () => new Response('{"results":[]}', { status: 200 }));
    expect(r.code).toBe(2);
    expect(r.posted).toHaveLength(0);
    expect(r.err).toContain(`the diff takes ${MAX_BATCH_CALLS + 1} calls, more than the ${MAX_BATCH_CALLS} flowgate applies in one batch (all or none); nothing was applied: apply team.yaml in parts`);
  }, 30_000);

  it("explains flowgate's 413", async () => {
    const r = await run(users(2), () => new Response(JSON.stringify({ error_code: 'REQUEST_LIMIT_EXCEEDED', message: 'Request body is larger than the limit of 1048576 bytes' }), { status: 413 }));
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      "flowgate: 413 REQUEST_LIMIT_EXCEEDED: the diff's 2 calls make a batch larger than flowgate reads (Request body is larger than the limit of 1048576 bytes); nothing was applied: apply team.yaml in parts (some of its users, groups or grants at a time)\n",
    );
  });
});
