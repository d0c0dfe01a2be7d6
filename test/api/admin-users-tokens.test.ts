import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_MAX_BODY_BYTES: '2048' });
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

const api = () => request(fg.url);
const auditCount = async () => ((await fg.store.sql.get('SELECT count(*) AS n FROM audit_log')) as { n: number }).n;
const userCount = async () => ((await fg.store.sql.get('SELECT count(*) AS n FROM users')) as { n: number }).n;

async function createUser(body: Record<string, unknown>) {
  return api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send(body);
}
async function mint(username: string, expiration?: string, auth = adminAuth()) {
  return api()
    .patch('/api/2.0/mlflow/permissions/users/access-token')
    .set('Authorization', auth)
    .send({ username, ...(expiration ? { expiration } : {}) });
}
const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();

describe('authentication', () => {
  it('answers 401 with the Basic challenge and MLflow error JSON without credentials', async () => {
    const res = await api().get('/api/2.0/mlflow/permissions/users');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Basic realm="mlflow"');
    expect(res.body).toEqual({ error_code: 'UNAUTHENTICATED', message: expect.any(String) });
  });

  it('answers 401 for a wrong token, a wrong username, and malformed Basic', async () => {
    for (const auth of [basic(ADMIN.username, 'nope'), basic('someone', ADMIN.token), 'Basic !!!', 'Basic ' + Buffer.from('nocolon').toString('base64')]) {
      const res = await api().get('/api/2.0/mlflow/permissions/users').set('Authorization', auth);
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Basic realm="mlflow"');
    }
  });

  it('lets the bootstrap admin in, under /api and /ajax-api', async () => {
    for (const prefix of ['/api/2.0', '/ajax-api/2.0']) {
      const res = await api().get(`${prefix}/mlflow/permissions/users`).set('Authorization', adminAuth());
      expect(res.status).toBe(200);
      expect(res.body.users.map((u: { username: string }) => u.username)).toContain('admin');
    }
  });
});

describe('users', () => {
  it('creates a user and a service account (both paths) and lists them apart', async () => {
    const a = await createUser({ username: 'alice', display_name: 'Alice A', is_admin: false, is_service_account: false });
    expect(a.status).toBe(201);
    expect(a.body.user).toMatchObject({ username: 'alice', display_name: 'Alice A', is_admin: false, is_service_account: false });
    const sa = await api()
      .post('/api/2.0/mlflow/users')
      .set('Authorization', adminAuth())
      .send({ username: 'team-a-sa', display_name: 'Team A pipelines', is_admin: false, is_service_account: true });
    expect(sa.status).toBe(201);
    const sas = await api().get('/api/2.0/mlflow/permissions/service-accounts').set('Authorization', adminAuth());
    expect(sas.body.service_accounts.map((u: { username: string }) => u.username)).toEqual(['team-a-sa']);
    const one = await api().get('/api/2.0/mlflow/permissions/users/alice').set('Authorization', adminAuth());
    expect(one.body.user).toMatchObject({ username: 'alice', groups: [] });
  });

  it.each([
    [{}, /'username' is required/],
    [{ username: 42 }, /'username'/],
    [{ username: 'bad name with spaces' }, /'username'/],
    [{ username: 'bob', is_admin: 'yes' }, /'is_admin' must be a boolean/],
    [{ username: 'bob', is_service_account: 1 }, /'is_service_account'/],
    [{ username: 'bob', is_admin: true, is_service_account: true }, /service account cannot be an admin/],
    [{ username: 'bob', colour: 'red' }, /unknown field\(s\) 'colour'/],
  ])('refuses %j with 400 and writes nothing', async (body, message) => {
    const [users, audits] = [(await userCount()), (await auditCount())];
    const res = await createUser(body);
    expect(res.status).toBe(400);
    expect(res.body.error_code).toBe('INVALID_PARAMETER_VALUE');
    expect(res.body.message).toMatch(message);
    expect([(await userCount()), (await auditCount())]).toEqual([users, audits]);
  });

  it.each([
    ['a NUL (PostgreSQL cannot store one: it was a 500)', 'Ann\u0000', /'display_name' must not contain control characters/],
    ['an ANSI escape', 'Ann\u001b[2J\u001b[31mroot', /'display_name' must not contain control characters/],
    ['a newline', 'Ann\nadmin  true', /'display_name' must not contain control characters/],
    ['DEL', 'Ann\u007f', /'display_name' must not contain control characters/],
    ['257 characters', 'x'.repeat(257), /'display_name' must be at most 256 characters/],
    ['nothing', '', /'display_name' must not be empty/],
  ])('refuses a display_name with %s on create and on update: 400 naming the field, nothing written', async (_what, displayName, message) => {
    const [users, audits] = [await userCount(), await auditCount()];
    for (const path of ['/api/2.0/mlflow/users/create', '/api/2.0/mlflow/users']) {
      const res = await api().post(path).set('Authorization', adminAuth()).send({ username: 'dn-refused', display_name: displayName });
      expect(res.status, path).toBe(400);
      expect(res.body).toEqual({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringMatching(message) });
    }
    const up = await api().patch('/api/2.0/mlflow/permissions/users/alice').set('Authorization', adminAuth()).send({ display_name: displayName });
    expect(up.status).toBe(400);
    expect(up.body).toEqual({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringMatching(message) });
    expect((await api().get('/api/2.0/mlflow/permissions/users/dn-refused').set('Authorization', adminAuth())).status).toBe(404);
    expect((await api().get('/api/2.0/mlflow/permissions/users/alice').set('Authorization', adminAuth())).body.user.display_name).toBe('Alice A');
    expect([await userCount(), await auditCount()]).toEqual([users, audits]);
  });

  it('keeps a display_name of any other text, 256 characters included', async () => {
    const res = await createUser({ username: 'dn-kept', display_name: 'Zoë 山田 — O\'Brien 🙂' });
    expect(res.status).toBe(201);
    expect(res.body.user.display_name).toBe('Zoë 山田 — O\'Brien 🙂');
    const long = await api().patch('/api/2.0/mlflow/permissions/users/dn-kept').set('Authorization', adminAuth()).send({ display_name: 'y'.repeat(256) });
    expect(long.status).toBe(200);
    expect(long.body.user.display_name).toBe('y'.repeat(256));
    expect((await api().delete('/api/2.0/mlflow/permissions/users/dn-kept').set('Authorization', adminAuth())).status).toBe(200);
  });

  it('refuses malformed JSON with 400, an oversize body with 413, a duplicate with 409', async () => {
    const bad = await api()
      .post('/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .set('Content-Type', 'application/json')
      .send('{"username": "x",');
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ error_code: 'INVALID_PARAMETER_VALUE', message: 'Malformed JSON in the request body' });
    const big = await createUser({ username: 'big', display_name: 'x'.repeat(5000) });
    expect(big.status).toBe(413);
    expect(big.body.error_code).toBe('REQUEST_LIMIT_EXCEEDED');
    const before = (await auditCount());
    const dup = await createUser({ username: 'alice' });
    expect(dup.status).toBe(409);
    expect(dup.body.error_code).toBe('RESOURCE_ALREADY_EXISTS');
    expect((await auditCount())).toBe(before);
  });

  it('answers 404 for unknown users and admin endpoints', async () => {
    const u = await api().get('/api/2.0/mlflow/permissions/users/ghost').set('Authorization', adminAuth());
    expect(u.status).toBe(404);
    expect(u.body.error_code).toBe('RESOURCE_DOES_NOT_EXIST');
    const e = await api().get('/api/2.0/mlflow/permissions/nothing-here').set('Authorization', adminAuth());
    expect(e.status).toBe(404);
    expect(e.body.error_code).toBe('ENDPOINT_NOT_FOUND');
  });

  it('updates and deletes a user; deletion ends their token', async () => {
    await createUser({ username: 'carol' });
    const token = (await mint('carol', inDays(5))).body.token as string;
    expect((await api().get('/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('carol', token))).status).toBe(200);
    const up = await api().patch('/api/2.0/mlflow/permissions/users/carol').set('Authorization', adminAuth()).send({ display_name: 'Carol C' });
    expect(up.body.user.display_name).toBe('Carol C');
    const del = await api().delete('/api/2.0/mlflow/permissions/users/carol').set('Authorization', adminAuth());
    expect(del.status).toBe(200);
    expect((await api().get('/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('carol', token))).status).toBe(401);
  });
});

describe('access tokens', () => {
  it('mints a token shown once, stores only its hash, and lets it authenticate', async () => {
    const res = await mint('alice', inDays(30));
    expect(res.status).toBe(200);
    const token = res.body.token as string;
    expect(token).toMatch(/^fgt_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(token.slice(4), 'base64url').length).toBe(32);
    expect(Date.parse(res.body.expiration)).toBeGreaterThan(Date.now() + 29 * 86_400_000);
    const rows = (await fg.store.sql.all('SELECT token_hash FROM access_tokens')) as { token_hash: string }[];
    expect(rows.some((r) => r.token_hash.includes(token) || token.includes(r.token_hash))).toBe(false);
    const dump = JSON.stringify((await fg.store.sql.all('SELECT * FROM audit_log')));
    expect(dump).not.toContain(token);
    const me = await api().get('/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('alice', token));
    expect(me.status).toBe(200);
    expect(me.body.user.username).toBe('alice');
    expect(fg.logs.join('')).not.toContain(token);
  });

  it.each([
    ['yesterday', new Date(Date.now() - 86_400_000).toISOString(), /in the future/],
    ['too far', inDays(400), /at most 366 days/],
    ['not a date', 'next tuesday', /ISO 8601/],
    ['impossible date', '2026-13-45T00:00:00Z', /not a valid date|ISO 8601/],
  ])('refuses an expiration that is %s, writing nothing', async (_label, expiration, message) => {
    const before = ((await fg.store.sql.get('SELECT count(*) AS n FROM access_tokens')) as { n: number }).n;
    const res = await mint('alice', expiration);
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(message);
    expect(((await fg.store.sql.get('SELECT count(*) AS n FROM access_tokens')) as { n: number }).n).toBe(before);
  });

  it('lets any user mint their own token but not someone else’s; unknown user is 404', async () => {
    const t1 = (await mint('alice', inDays(3))).body.token as string;
    const own = await api()
      .patch('/ajax-api/2.0/mlflow/permissions/users/access-token')
      .set('Authorization', basic('alice', t1))
      .send({ expiration: inDays(3) });
    expect(own.status).toBe(200);
    expect(own.body.username).toBe('alice');
    const other = await mint('team-a-sa', inDays(3), basic('alice', own.body.token));
    expect(other.status).toBe(403);
    expect(other.body.error_code).toBe('PERMISSION_DENIED');
    expect((await mint('ghost', inDays(3))).status).toBe(404);
  });

  it('expires tokens: a token past its expiry gets 401', async () => {
    const res = await mint('alice', inDays(1));
    const token = res.body.token as string;
    (await fg.store.sql.run('UPDATE access_tokens SET expires_at = ? WHERE revoked_at IS NULL AND user_id = (SELECT id FROM users WHERE username = ?)', [Date.now() - 1, 'alice']));
    const me = await api().get('/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('alice', token));
    expect(me.status).toBe(401);
  });

  it('revokes on request', async () => {
    const token = (await mint('alice', inDays(1))).body.token as string;
    const rev = await api().delete('/api/2.0/mlflow/permissions/users/alice/access-token').set('Authorization', basic('alice', token));
    expect(rev.status).toBe(200);
    expect(rev.body.revoked).toBe(1);
    expect((await api().get('/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('alice', token))).status).toBe(401);
  });
});

describe('forwarding to MLflow', () => {
  it('denies what the caller holds no grant for, and unknown routes; strips credentials and client identity headers', async () => {
    const token = (await mint('alice', inDays(1))).body.token as string;
    const denied = await api().get('/api/2.0/mlflow/experiments/get?experiment_id=5').set('Authorization', basic('alice', token));
    expect(denied.status).toBe(403);
    expect(denied.body.error_code).toBe('PERMISSION_DENIED');
    const unknown = await api().get('/api/2.0/mlflow/not-a-route').set('Authorization', basic('alice', token));
    expect(unknown.status).toBe(403);
    expect((await api().get('/api/2.0/mlflow/experiments/get?experiment_id=5')).status).toBe(401);
    upstream.seen.length = 0;
    const ok = await api()
      .get('/api/2.0/mlflow/experiments/get?experiment_id=5')
      .set('Authorization', adminAuth())
      .set('X-Forwarded-User', 'mallory')
      .set('x_auth_request_user', 'mallory');
    expect(ok.status).toBe(200);
    expect(upstream.seen).toHaveLength(1);
    expect(upstream.seen[0]!.url).toBe('/api/2.0/mlflow/experiments/get?experiment_id=5');
    expect(upstream.seen[0]!.headers.authorization).toBeUndefined();
    expect(upstream.seen[0]!.headers['x-forwarded-user']).toBe('admin');
    expect(upstream.seen[0]!.headers['x_auth_request_user']).toBeUndefined();
  });
});
