import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/** The spec's shared team setup, steps 1-5, over HTTP only; then a restart loses nothing. */
describe('shared team setup (spec §1)', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  const api = () => request(fg.url);
  const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');

  beforeAll(async () => {
    upstream = await startStubUpstream((r) =>
      r.url.endsWith('/experiments/create') ? { status: 200, body: { experiment_id: '17' } } : { status: 200, body: {} },
    );
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_BASE_PATH: '/mlflow' });
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  it('walks steps 1-5, rotates the token, and survives a restart', async () => {
    // 1. the shared resource, created through flowgate in front of the upstream
    const exp = await api().post('/mlflow/api/2.0/mlflow/experiments/create').set('Authorization', adminAuth()).send({ name: 'team-a-shared' });
    expect(exp.status).toBe(200);
    const experimentId = exp.body.experiment_id as string;
    expect(upstream.seen.at(-1)).toMatchObject({ method: 'POST', url: '/api/2.0/mlflow/experiments/create' });
    expect(JSON.parse(upstream.seen.at(-1)!.body)).toEqual({ name: 'team-a-shared' });

    // 2. grant the team group (the group exists once its first member logged in; here an admin makes it)
    await api().post('/mlflow/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth()).send({ group_name: 'team-a' });
    const grant = await api()
      .post(`/mlflow/api/2.0/mlflow/permissions/groups/team-a/experiments/${experimentId}`)
      .set('Authorization', adminAuth())
      .send({ permission: 'EDIT' });
    expect(grant.status).toBe(201);

    // 3. the service account
    const sa = await api()
      .post('/mlflow/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .send({ username: 'team-a-pipelines', display_name: 'Team A pipelines', is_admin: false, is_service_account: true });
    expect(sa.status).toBe(201);

    // 4. its token, with an expiration
    const mint = () =>
      api()
        .patch('/mlflow/api/2.0/mlflow/permissions/users/access-token')
        .set('Authorization', adminAuth())
        .send({ username: 'team-a-pipelines', expiration: inDays(180) });
    const first = (await mint()).body.token as string;
    const current = () => api().get('/mlflow/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('team-a-pipelines', first));
    expect((await current()).status).toBe(200);

    // 5. the secret's three values work as the Python client sends them (Basic on every request)
    const env = { MLFLOW_TRACKING_URI: `${fg.url}/mlflow/`, MLFLOW_TRACKING_USERNAME: 'team-a-pipelines', MLFLOW_TRACKING_PASSWORD: first };
    const viaUri = await request(env.MLFLOW_TRACKING_URI.replace(/\/$/, ''))
      .get('/api/2.0/mlflow/permissions/users/current')
      .set('Authorization', basic(env.MLFLOW_TRACKING_USERNAME, env.MLFLOW_TRACKING_PASSWORD));
    expect(viaUri.body.user.username).toBe('team-a-pipelines');

    // generating a new token invalidates the previous one at once
    const second = (await mint()).body.token as string;
    expect(second).not.toBe(first);
    expect((await current()).status).toBe(401);
    expect((await api().get('/mlflow/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('team-a-pipelines', second))).status).toBe(200);

    // a restart keeps users, groups, grants and tokens
    fg = await fg.restart();
    const afterRestart = await api().get('/mlflow/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('team-a-pipelines', second));
    expect(afterRestart.status).toBe(200);
    expect((await current()).status).toBe(401);
    const grants = await api().get(`/mlflow/api/2.0/mlflow/permissions/experiments/${experimentId}/groups`).set('Authorization', adminAuth());
    expect(grants.body.groups).toEqual([expect.objectContaining({ group_name: 'team-a', permission: 'EDIT' })]);
  });

  it('serves nothing outside the base path', async () => {
    const res = await api().get('/api/2.0/mlflow/permissions/users').set('Authorization', adminAuth());
    expect(res.status).toBe(404);
  });
});
