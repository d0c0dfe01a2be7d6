import request from 'supertest';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/*
 * The lists' own-permission look-up (`permissions/ui/my-permissions/experiments?id=…`) for a caller
 * holding experiment pattern grants needs each experiment's name from MLflow. A request repeating one
 * id (up to 200 times) asks MLflow once per distinct id, and an id MLflow has no experiment for is
 * remembered like a name: asking again costs MLflow nothing, so a missing id answers as fast as a
 * hidden one whose name is cached (no timing oracle on existence, no 200 MLflow calls per request).
 * The gate still asks afresh about an id remembered as missing: one made since is decided with the
 * patterns its name matches.
 */
let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const api = () => request(fg.url);
/** Experiments the stub MLflow has, by id. */
const experiments = new Map<string, string>([['7', 'hidden-seven']]);
let bob = '';

const nameLookups = (id: string) => upstream.seen.filter((r) => r.url.startsWith('/api/2.0/mlflow/experiments/get?') && new URL(r.url, 'http://x').searchParams.get('experiment_id') === id).length;
const mine = (ids: readonly string[]) => api().get('/ajax-api/2.0/mlflow/permissions/ui/my-permissions/experiments').query({ id: [...ids] }).set('Authorization', bob);

beforeAll(async () => {
  upstream = await startStubUpstream((req) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/api/2.0/mlflow/experiments/get') {
      const id = url.searchParams.get('experiment_id') ?? '';
      const name = experiments.get(id);
      return name === undefined
        ? { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: `No Experiment with id=${id} exists` } }
        : { status: 200, body: { experiment: { experiment_id: id, name, lifecycle_stage: 'active' } } };
    }
    return { status: 200, body: {} };
  });
  // READ by default: an experiment decided without its name's patterns would be readable.
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_DEFAULT_PERMISSION: 'READ' });
  await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'bob' }).expect(201);
  const token = (await api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'bob' })).body.token as string;
  bob = basic('bob', token);
  // bob holds experiment patterns: his decisions need experiment names.
  for (const [pattern, permission] of [['team-b/*', 'EDIT'], ['secret-*', 'NO_PERMISSIONS']])
    await api().post('/api/2.0/mlflow/permissions/users/bob/patterns').set('Authorization', adminAuth()).send({ resource_type: 'experiment', pattern, permission }).expect(201);
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});
beforeEach(() => {
  upstream.seen.length = 0;
});

describe('my-permissions on experiments', () => {
  it('asks MLflow once per distinct id, however often the request repeats it', async () => {
    const ids = [...Array.from({ length: 100 }, () => '1001'), ...Array.from({ length: 99 }, () => '1002'), '7'];
    const r = await mine(ids);
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.body.permissions).sort()).toEqual(['1001', '1002', '7']);
    expect(r.body.permissions['7']).toEqual({ permission: 'READ', source: 'default', groups: [] });
    for (const id of ['1001', '1002']) expect(r.body.permissions[id], id).toEqual({ permission: 'NO_PERMISSIONS', source: 'none', groups: [] });
    for (const id of ['1001', '1002', '7']) expect(nameLookups(id), id).toBe(1);
  });

  it('remembers an id MLflow has no experiment for: asked again, MLflow is not asked', async () => {
    const first = await mine(Array.from({ length: 200 }, () => '2001'));
    expect(first.status).toBe(200);
    expect(first.body.permissions['2001']).toEqual({ permission: 'NO_PERMISSIONS', source: 'none', groups: [] });
    expect(nameLookups('2001')).toBe(1);
    for (let i = 0; i < 3; i++) expect((await mine(Array.from({ length: 200 }, () => '2001'))).body.permissions['2001']).toEqual(first.body.permissions['2001']);
    expect(nameLookups('2001')).toBe(1);
    // Asked alike for an existing experiment whose name is cached: neither costs MLflow a call now.
    await mine(['7']);
    upstream.seen.length = 0;
    await mine(['7', '2001']);
    expect(upstream.seen.filter((r) => r.url.startsWith('/api/2.0/mlflow/experiments/get?'))).toEqual([]);
  });

  it('the gate asks afresh about an id remembered as missing: one created since is decided with its patterns', async () => {
    expect((await mine(['3001'])).body.permissions['3001']).toEqual({ permission: 'NO_PERMISSIONS', source: 'none', groups: [] });
    expect(nameLookups('3001')).toBe(1);
    // Created (outside flowgate's hooks, or by a create that forgets no name) under a name bob's deny matches.
    experiments.set('3001', 'secret-made-later');
    const got = await api().get('/api/2.0/mlflow/experiments/get').query({ experiment_id: '3001' }).set('Authorization', bob);
    expect(got.status, got.text).toBe(403);
    expect(nameLookups('3001')).toBe(2);
    // Found, it is remembered by its name again.
    expect((await mine(['3001'])).body.permissions['3001']).toEqual({ permission: 'NO_PERMISSIONS', source: 'none', groups: [] });
    expect(nameLookups('3001')).toBe(2);
    // A rename through flowgate forgets every name, remembered missing ones too.
    await api().post('/api/2.0/mlflow/experiments/update').set('Authorization', adminAuth()).send({ experiment_id: '7', new_name: 'hidden-seven' }).expect(200);
    await mine(['2001']);
    expect(nameLookups('2001')).toBe(1);
  });
});
