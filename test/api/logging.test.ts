import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, ADMIN, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { eventually } from '../helpers/prom.js';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;

beforeAll(async () => {
  upstream = await startStubUpstream();
  // trace: the most verbose level, so anything that could leak would be written.
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_LOG_LEVEL: 'trace' });
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const EXPERIMENT = '/api/2.0/mlflow/experiments/get?experiment_id=1';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface RequestLine {
  level: string;
  msg: string;
  requestId: string;
  route?: string;
  user?: string;
  decision?: string;
  reason?: string;
  status: number;
  durationMs: number;
  upstreamMs?: number;
  upstreamStatus?: number;
}

function requestLines(logs: readonly string[]): RequestLine[] {
  return logs
    .flatMap((chunk) => chunk.split('\n'))
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RequestLine)
    .filter((l) => l.msg === 'request');
}
const lineFor = (logs: readonly string[], requestId: string) =>
  eventually(() => {
    const line = requestLines(logs).find((l) => l.requestId === requestId);
    if (!line) throw new Error(`no log line for ${requestId}`);
    return line;
  });

describe('request log lines', () => {
  it('writes one structured JSON line per request with the fields operators need', async () => {
    const res = await request(fg.url).get(EXPERIMENT).set('Authorization', adminAuth()).set('X-Request-Id', 'ok-line-1');
    expect(res.status).toBe(200);
    const line = await lineFor(fg.logs, 'ok-line-1');
    expect(line).toMatchObject({ level: 'info', user: 'admin', decision: 'allow', status: 200, upstreamStatus: 200 });
    expect(typeof line.route).toBe('string');
    expect(line.route).not.toContain('?');
    expect(typeof line.reason).toBe('string');
    expect(line.durationMs).toBeGreaterThan(0);
    expect(line.upstreamMs).toBeGreaterThan(0);
    expect(line.upstreamMs).toBeLessThanOrEqual(line.durationMs);
    // To the microsecond: no long tails of digits in the line.
    for (const ms of [line.durationMs, line.upstreamMs]) expect(String(ms)).toMatch(/^\d+(\.\d{1,3})?$/);
    expect(requestLines(fg.logs).filter((l) => l.requestId === 'ok-line-1')).toHaveLength(1);
  });

  it('logs denials with their reason and no upstream time', async () => {
    const res = await request(fg.url).get(EXPERIMENT).set('X-Request-Id', 'denied-line-1');
    expect(res.status).toBe(401);
    const line = await lineFor(fg.logs, 'denied-line-1');
    expect(line).toMatchObject({ decision: 'deny', reason: 'UNAUTHENTICATED', status: 401 });
    expect(line.user).toBeUndefined();
    expect(line.upstreamMs).toBeUndefined();
  });
});

describe('request ids', () => {
  it('accepts a well-formed id from the trusted header, answers with it, and passes it upstream', async () => {
    const res = await request(fg.url).get(EXPERIMENT).set('Authorization', adminAuth()).set('X-Request-Id', 'trace-abc.123:x');
    expect(res.status).toBe(200);
    expect(res.headers['x-request-id']).toBe('trace-abc.123:x');
    expect(upstream.seen.at(-1)?.headers['x-request-id']).toBe('trace-abc.123:x');
  });

  it('makes a fresh id when none, or a malformed one, is offered, and passes that one upstream', async () => {
    for (const offered of [undefined, 'has space', 'x'.repeat(129), 'new\tline', '<script>']) {
      const r = request(fg.url).get(EXPERIMENT).set('Authorization', adminAuth());
      const res = await (offered === undefined ? r : r.set('X-Request-Id', offered));
      expect(res.status).toBe(200);
      const id = res.headers['x-request-id'] as string;
      expect(id, String(offered)).toMatch(UUID);
      expect(upstream.seen.at(-1)?.headers['x-request-id']).toBe(id);
      await lineFor(fg.logs, id);
    }
  });

  it('trusts only the configured header', async () => {
    const other = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_TRUSTED_REQUEST_ID_HEADER: 'X-Correlation-Id' });
    try {
      const ignored = await request(other.url).get(EXPERIMENT).set('Authorization', adminAuth()).set('X-Request-Id', 'client-chosen');
      expect(ignored.headers['x-request-id']).toMatch(UUID);
      expect(upstream.seen.at(-1)?.headers['x-request-id']).toBe(ignored.headers['x-request-id']);
      const taken = await request(other.url).get(EXPERIMENT).set('Authorization', adminAuth()).set('X-Correlation-Id', 'corr-42');
      expect(taken.headers['x-request-id']).toBe('corr-42');
      expect(upstream.seen.at(-1)?.headers['x-request-id']).toBe('corr-42');
      await lineFor(other.logs, 'corr-42');
    } finally {
      await other.close();
      removeDir(other.dir);
    }
  });
});

describe('secrets never reach the logs', () => {
  it('keeps tokens, cookies and API keys out of every line, on failure and on success', async () => {
    const cookie = 'flowgate_session=cookie-secret-7f3a9c1e5b';
    const apiKey = 'apikey-secret-1b2c3d4e5f';
    const wrongToken = 'fgt_wrong-secret-9e8d7c6b5a4f3e2d1c0b';
    const created = await request(fg.url)
      .post('/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .send({ username: 'carol', display_name: 'Carol', is_admin: false, is_service_account: false });
    expect(created.status).toBe(201);
    const minted = await request(fg.url)
      .patch('/api/2.0/mlflow/permissions/users/access-token')
      .set('Authorization', adminAuth())
      .send({ username: 'carol' });
    expect(minted.status).toBe(200);
    const newToken = minted.body.token as string;
    expect(newToken.length).toBeGreaterThan(20);

    // [credential, whether it authenticates]
    const attempts: Array<[string, boolean]> = [
      [basic(ADMIN.username, wrongToken), false],
      [basic('carol', wrongToken), false],
      [basic('carol', newToken), true],
      [adminAuth(), true],
      [`Bearer ${wrongToken}`, false],
    ];
    for (const [authorization, proven] of attempts) {
      for (const path of [EXPERIMENT, '/api/2.0/mlflow/permissions/users/current', '/api/2.0/mlflow/nope']) {
        const res = await request(fg.url)
          .get(path)
          .set('Authorization', authorization)
          .set('Cookie', cookie)
          .set('X-Api-Key', apiKey)
          .set('X-Forwarded-User', 'spoofed-user-secret');
        if (proven) expect(res.status, path).not.toBe(401);
        else expect(res.status, path).toBe(401);
      }
    }
    // The request lines of everything above are written on 'close'; wait for the last one.
    await eventually(() => expect(requestLines(fg.logs).length).toBeGreaterThanOrEqual(15));

    const all = fg.logs.join('');
    const forbidden = [
      ADMIN.token,
      newToken,
      wrongToken,
      'cookie-secret-7f3a9c1e5b',
      apiKey,
      Buffer.from(`${ADMIN.username}:${ADMIN.token}`).toString('base64'),
      Buffer.from(`${ADMIN.username}:${newToken}`).toString('base64'),
      Buffer.from(`${ADMIN.username}:${wrongToken}`).toString('base64'),
    ];
    for (const secret of forbidden) expect(all.includes(secret), `a secret (${secret.slice(0, 6)}…) appears in the logs`).toBe(false);
    expect(all).not.toMatch(/fgt_[A-Za-z0-9_-]{20,}/);
    expect(all.toLowerCase()).not.toContain('authorization');
  });

  it("keeps a token typed into the sign-in form's user name field out of the refusal's line", async () => {
    const pasted = 'fgt_pasted-into-the-name-field-4a5b6c7d8e9f';
    const origin = new URL(fg.url).origin;
    const res = await request(fg.url).post('/flowgate/login').set('Origin', origin).type('form').send({ username: pasted, token: 'whatever-was-typed', return_to: '/' });
    expect(res.status).toBe(401);
    await eventually(() => expect(fg.logs.join('')).toContain('ui sign-in refused'));
    expect(fg.logs.join('')).not.toContain('pasted-into-the-name-field');
    expect(fg.logs.join('')).not.toContain('whatever-was-typed');
  });

  it("shows the upstream URL at start without the password in it", async () => {
    const withPassword = new URL(upstream.url);
    withPassword.username = 'svc';
    withPassword.password = 'upstream-pa55-secret';
    const other = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: withPassword.href });
    try {
      const listening = other.logs.find((l) => l.includes('flowgate listening'));
      expect(listening).toBeDefined();
      expect(JSON.parse(listening!).upstream).toBe(upstream.url);
      expect(other.logs.join('')).not.toContain('upstream-pa55-secret');
    } finally {
      await other.close();
      removeDir(other.dir);
    }
  });
});
