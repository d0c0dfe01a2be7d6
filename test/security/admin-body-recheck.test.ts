import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * An admin call is checked when its headers arrive, but its body may come up to the body-read deadline
 * later. The attacker is an administrator (or manager) who expects to lose that power: they open
 * calls whose bodies they hold back, and send them once demoted or deleted. Whatever they held when
 * the headers came must not be what the call runs with.
 */
const V2 = '/api/2.0/mlflow';

let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let fg: TestFlowgate;

const admin = {
  post: (path: string, body: object) => request(fg.url).post(path).set('Authorization', adminAuth()).send(body),
  patch: (path: string, body: object) => request(fg.url).patch(path).set('Authorization', adminAuth()).send(body),
  get: (path: string) => request(fg.url).get(path).set('Authorization', adminAuth()),
  delete: (path: string) => request(fg.url).delete(path).set('Authorization', adminAuth()),
};

/** An administrator of their own, with a token. */
async function makeAdmin(username: string): Promise<string> {
  await admin.post(`${V2}/users/create`, { username, is_admin: true }).expect(201);
  const minted = await admin.patch(`${V2}/permissions/users/access-token`, { username }).expect(200);
  return minted.body.token as string;
}

/**
 * Sends the headers of a JSON POST with `Expect: 100-continue`, runs `meanwhile` once flowgate has
 * checked them (it answers 100 Continue only after its access check), then sends the body.
 */
function postHoldingBody(path: string, auth: string | Record<string, string>, body: object, meanwhile: () => Promise<void>): Promise<{ status: number; json: any }> {
  const payload = Buffer.from(JSON.stringify(body));
  const url = new URL(fg.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path,
        headers: Object.assign(typeof auth === 'string' ? { Authorization: auth } : auth, { 'Content-Type': 'application/json', 'Content-Length': payload.length, Expect: '100-continue' }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString() || '{}') }));
      },
    );
    req.on('error', reject);
    req.on('continue', () => {
      meanwhile().then(() => req.end(payload), reject);
    });
    req.flushHeaders();
  });
}

beforeAll(async () => {
  upstream = await startStubUpstream();
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
}, 60_000);

afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await upstream?.close();
});

describe('an admin call whose body arrives after the caller lost the right', () => {
  it('runs when nothing changed while the body was on its way (the way in works)', async () => {
    const token = await makeAdmin('steady');
    const answer = await postHoldingBody(`${V2}/users/create`, basic('steady', token), { username: 'made-by-steady' }, async () => {});
    expect(answer.status).toBe(201);
    await admin.get(`${V2}/permissions/users/made-by-steady`).expect(200);
  });

  it('is refused once the caller was demoted, and creates nothing', async () => {
    const token = await makeAdmin('leaving');
    const answer = await postHoldingBody(`${V2}/users/create`, basic('leaving', token), { username: 'ghost', is_admin: true }, async () => {
      await admin.patch(`${V2}/permissions/users/leaving`, { is_admin: false }).expect(200);
    });
    expect(answer.status).toBe(403);
    expect(answer.json.error_code).toBe('PERMISSION_DENIED');
    await admin.get(`${V2}/permissions/users/ghost`).expect(404);
  });

  it('is refused once the caller was deleted, and mints nothing', async () => {
    const token = await makeAdmin('gone');
    await admin.post(`${V2}/users/create`, { username: 'target' }).expect(201);
    const answer = await postHoldingBody(`${V2}/permissions/groups`, basic('gone', token), { group_name: 'backdoor' }, async () => {
      await admin.delete(`${V2}/permissions/users/gone`).expect(200);
    });
    expect(answer.status).toBe(401);
    expect(answer.json.error_code).toBe('UNAUTHENTICATED');
    const groups = await admin.get(`${V2}/permissions/groups`).expect(200);
    expect(JSON.stringify(groups.body)).not.toContain('backdoor');
  });

  it('is refused once the token it came with was revoked, and creates nothing', async () => {
    const token = await makeAdmin('leaked');
    const answer = await postHoldingBody(`${V2}/users/create`, basic('leaked', token), { username: 'revoked-ghost', is_admin: true }, async () => {
      await admin.delete(`${V2}/permissions/users/leaked/access-token`).expect(200);
    });
    expect(answer.status).toBe(401);
    expect(answer.json.error_code).toBe('UNAUTHENTICATED');
    await admin.get(`${V2}/permissions/users/revoked-ghost`).expect(404);
  });

  it('is refused once the browser session it came with was ended, and creates nothing', async () => {
    const token = await makeAdmin('signed-in');
    const origin = new URL(fg.url).origin;
    const signIn = await request(fg.url).post('/flowgate/login').set('Origin', origin).type('form').send({ username: 'signed-in', token, return_to: '/' }).expect(302);
    const cookie = ([] as string[]).concat(signIn.headers['set-cookie'] ?? []).find((c) => /flowgate_session=/.test(c))!.split(';')[0]!;
    const answer = await postHoldingBody(`${V2}/users/create`, { Cookie: cookie, Origin: origin }, { username: 'session-ghost', is_admin: true }, async () => {
      expect((await admin.delete(`${V2}/permissions/users/signed-in/sessions`).expect(200)).body.ended).toBe(1);
    });
    expect(answer.status).toBe(401);
    expect(answer.json.error_code).toBe('UNAUTHENTICATED');
    await admin.get(`${V2}/permissions/users/session-ghost`).expect(404);
  });

  it('a batch is decided on the caller as they are once its body arrived', async () => {
    const token = await makeAdmin('batcher');
    const answer = await postHoldingBody(
      `${V2}/permissions/batch`,
      basic('batcher', token),
      { calls: [{ method: 'POST', path: 'users/create', body: { username: 'batch-ghost', is_admin: true } }] },
      async () => {
        await admin.patch(`${V2}/permissions/users/batcher`, { is_admin: false }).expect(200);
      },
    );
    expect(answer.status).toBe(403);
    await admin.get(`${V2}/permissions/users/batch-ghost`).expect(404);
  });
});
