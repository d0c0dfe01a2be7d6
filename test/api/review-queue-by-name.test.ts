import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { eventually } from '../helpers/prom.js';

const QUEUE = { queue_id: 'q-1', experiment_id: '1', name: 'triage', users: ['bob'] };
const BY_NAME = '/api/3.0/mlflow/review-queues/get-by-name';

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  upstream = await startStubUpstream((r) =>
    r.url.startsWith(BY_NAME) ? { status: 200, body: { review_queue: QUEUE } } : { status: 200, body: {} },
  );
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  for (const username of ['bob', 'carol']) {
    const created = await request(fg.url)
      .post('/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .send({ username, display_name: username, is_admin: false, is_service_account: false });
    expect(created.status).toBe(201);
    const minted = await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username });
    tokens[username] = minted.body.token as string;
    const granted = await request(fg.url)
      .post(`/api/2.0/mlflow/permissions/users/${username}/experiments/1`)
      .set('Authorization', adminAuth())
      .send({ permission: 'READ' });
    expect(granted.status).toBe(201);
  }
});
afterAll(async () => {
  await fg?.close();
  await upstream?.close();
  if (fg) removeDir(fg.dir);
});

const byNameCalls = () => upstream.seen.filter((s) => s.url.startsWith(BY_NAME)).length;

describe('a review queue opened by name', () => {
  it("answers an assigned reader with MLflow's answer from the look-up that decided it: one call to MLflow", async () => {
    const before = byNameCalls();
    const answer = await request(fg.url)
      .get(`${BY_NAME}?experiment_id=1&name=triage`)
      .set('Authorization', basic('bob', tokens.bob!))
      .set('X-Request-Id', 'queue-by-name-1');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toContain('application/json');
    expect(answer.text).toBe(JSON.stringify({ review_queue: QUEUE }));
    expect(byNameCalls() - before).toBe(1);
    await eventually(() => {
      const line = fg.logs.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.requestId === 'queue-by-name-1');
      expect(line).toMatchObject({ route: BY_NAME, user: 'bob', decision: 'allow', status: 200, upstreamStatus: 200 });
    });
  });

  it('refuses a reader who is not assigned, after that one call', async () => {
    const before = byNameCalls();
    const answer = await request(fg.url).get(`${BY_NAME}?experiment_id=1&name=triage`).set('Authorization', basic('carol', tokens.carol!));
    expect(answer.status).toBe(403);
    expect(answer.body.error_code).toBe('PERMISSION_DENIED');
    expect(byNameCalls() - before).toBe(1);
  });

  it('forwards an administrator (no look-up needed), still one call', async () => {
    const before = byNameCalls();
    const answer = await request(fg.url).get(`${BY_NAME}?experiment_id=1&name=triage`).set('Authorization', adminAuth());
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ review_queue: QUEUE });
    expect(byNameCalls() - before).toBe(1);
  });
});
