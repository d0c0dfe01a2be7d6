import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/** The configured admin token is configuration's to change: no admin call may revoke or replace it. */
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

const api = () => request(fg.url);
const whoAmI = (auth: string) => api().get('/api/2.0/mlflow/permissions/users/current').set('Authorization', auth);
const mintOwn = (auth: string) => api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', auth).send({});
const revokeAdmin = (auth: string) => api().delete(`/api/2.0/mlflow/permissions/users/${ADMIN.username}/access-token`).set('Authorization', auth);

describe('the bootstrap admin token', () => {
  it('survives the admin minting a token for itself: the new one is added beside it, and the next replaces only that', async () => {
    const first = await mintOwn(adminAuth());
    expect(first.status).toBe(200);
    expect(first.body.username).toBe(ADMIN.username);
    expect(first.body.message).toMatch(/bootstrap token from configuration stays valid/);
    const minted = basic(ADMIN.username, first.body.token as string);
    expect((await whoAmI(adminAuth())).status).toBe(200);
    expect((await whoAmI(minted)).status).toBe(200);

    // Minted with the minted token, and by name: the earlier minted token goes, the configured one stays.
    const second = await api()
      .patch('/api/2.0/mlflow/permissions/users/access-token')
      .set('Authorization', minted)
      .send({ username: ADMIN.username });
    expect(second.status).toBe(200);
    expect((await whoAmI(minted)).status).toBe(401);
    expect((await whoAmI(basic(ADMIN.username, second.body.token as string))).status).toBe(200);
    expect((await whoAmI(adminAuth())).status).toBe(200);
  });

  it('survives DELETE of the admin user\'s tokens: refused with 400 naming configuration, and nothing is revoked', async () => {
    const minted = basic(ADMIN.username, (await mintOwn(adminAuth())).body.token as string);
    const auditBefore = ((await fg.store.sql.get('SELECT count(*) AS n FROM audit_log')) as { n: number }).n;
    for (const auth of [adminAuth(), minted]) {
      const refused = await revokeAdmin(auth);
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringMatching(/managed by configuration.*FLOWGATE_ADMIN_TOKEN/) });
    }
    expect((await whoAmI(adminAuth())).status).toBe(200);
    expect((await whoAmI(minted)).status).toBe(200);
    expect(((await fg.store.sql.get('SELECT count(*) AS n FROM audit_log')) as { n: number }).n).toBe(auditBefore);
  });

  it("leaves other users' revocation as it was", async () => {
    await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth())
      .send({ username: 'carol', display_name: 'Carol', is_admin: true, is_service_account: false });
    const token = (await api().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'carol' })).body.token as string;
    const revoked = await api().delete('/api/2.0/mlflow/permissions/users/carol/access-token').set('Authorization', adminAuth());
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked).toBe(1);
    expect((await whoAmI(basic('carol', token))).status).toBe(401);
  });

  it('stays protected after a restart on the same store', async () => {
    fg = await fg.restart();
    expect((await revokeAdmin(adminAuth())).status).toBe(400);
    expect((await mintOwn(adminAuth())).status).toBe(200);
    expect((await whoAmI(adminAuth())).status).toBe(200);
  });

  it('rotates at the restart: a new configured token revokes the previous one and the personal one, and keeps itself', async () => {
    const rotated = 'rotated-admin-token-0123456789abcdef0123456789';
    const personal = (await mintOwn(adminAuth())).body.token as string;
    expect((await whoAmI(basic(ADMIN.username, personal))).status).toBe(200);
    await fg.close();
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_ADMIN_TOKEN: rotated }, fg.dir);
    const rotatedAuth = basic(ADMIN.username, rotated);
    expect((await whoAmI(adminAuth())).status).toBe(401);
    expect((await whoAmI(basic(ADMIN.username, personal))).status).toBe(401);
    expect((await whoAmI(rotatedAuth)).status).toBe(200);
    // A restart with the same configured token revokes nothing more.
    const again = (await mintOwn(rotatedAuth)).body.token as string;
    fg = await fg.restart();
    expect((await whoAmI(basic(ADMIN.username, again))).status).toBe(200);
    expect((await whoAmI(rotatedAuth)).status).toBe(200);
    expect((await revokeAdmin(rotatedAuth)).status).toBe(400);
  });
});
