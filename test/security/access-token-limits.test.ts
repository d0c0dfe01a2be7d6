import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * `GET permissions/access-token-limits`: the token expiry rules a signed-in caller may plan with
 * (FLOWGATE_TOKEN_MAX_DAYS), told to nobody else and changing nothing; the limit it tells is the one
 * the token call keeps.
 */
describe('the access-token limits route, as an attacker sees it', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let carolToken = '';
  const api = () => request(fg.url);
  const LIMITS = '/api/2.0/mlflow/permissions/access-token-limits';

  beforeAll(async () => {
    upstream = await startStubUpstream();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_TOKEN_MAX_DAYS: '30' });
    await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'carol', display_name: 'Carol' });
    carolToken = (await api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'carol' })).body.token as string;
  });
  afterAll(async () => {
    await fg?.close();
    await upstream?.close();
    if (fg) removeDir(fg.dir);
  });

  it('tells a signed-in person the server’s limits (the default capped by the maximum), on every prefix', async () => {
    for (const prefix of ['/api/2.0', '/ajax-api/2.0']) {
      const res = await api().get(LIMITS.replace('/api/2.0', prefix)).set('Authorization', basic('carol', carolToken));
      expect(res.status, prefix).toBe(200);
      expect(res.body).toEqual({ default_expiration_days: 30, max_expiration_days: 30 });
    }
  });

  it('tells nothing without credentials or with wrong ones: 401 in MLflow’s error shape', async () => {
    for (const auth of [undefined, basic('carol', 'not-her-token'), basic('nobody', carolToken)]) {
      const call = api().get(LIMITS);
      const res = await (auth ? call.set('Authorization', auth) : call);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ error_code: 'UNAUTHENTICATED' });
      expect(JSON.stringify(res.body)).not.toContain('30');
    }
  });

  it('is read-only: other methods change nothing and are refused', async () => {
    for (const method of ['post', 'patch', 'delete'] as const) {
      const res = await api()[method](LIMITS).set('Authorization', adminAuth()).send({ max_expiration_days: 3650 });
      expect(res.status, method).toBeGreaterThanOrEqual(400);
      expect(res.status, method).toBeLessThan(500);
      expect(res.body.error_code, method).toEqual(expect.any(String));
    }
    expect((await api().get(LIMITS).set('Authorization', adminAuth())).body.max_expiration_days).toBe(30);
  });

  it('the limit told is the one the token call keeps', async () => {
    const day = 86_400_000;
    const mint = (days: number) =>
      api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', basic('carol', carolToken)).send({ expiration: new Date(Date.now() + days * day).toISOString() });
    const over = await mint(31);
    expect(over.status).toBe(400);
    expect(over.body.message).toContain('at most 30 days ahead');
    const within = await mint(29);
    expect(within.status).toBe(200);
  });
});
