import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/*
 * HEAD is matched as GET. Where an after-hook reads MLflow's answer to filter it, MLflow is asked the GET
 * (a HEAD answer has no body to filter): the caller gets GET's status and the filtered length, never 502,
 * and no after-hook failure is counted (its alert means a lost grant or mapping, not a caller's HEAD).
 */
let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let eve = '';
const HIDDEN = { secrets: [{ secret_id: 's-1', secret_name: 'someone-elses-openai-key', masked_value: 'sk-...abcd' }], endpoints: [], scorers: [], data: [] };

const hookFailures = () => fg.logs.filter((l) => l.includes('after-response hook failed')).length;

beforeAll(async () => {
  upstream = await startStubUpstream(() => ({ status: 200, body: HIDDEN }));
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  const api = request(fg.url);
  await api.post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'eve' });
  eve = (await api.patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'eve' })).body.token;
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

describe('HEAD on a route whose answer flowgate filters', () => {
  it.each(['/api/3.0/mlflow/gateway/secrets/list', '/api/3.0/mlflow/gateway/endpoints/list', '/ajax-api/3.0/mlflow/gateway/secrets/config', '/gateway/mlflow/v1/models'])(
    '%s: GET’s status and filtered length, no body, no hook failure; MLflow was asked a GET',
    async (path) => {
      const get = await request(fg.url).get(path).set('Authorization', basic('eve', eve));
      const before = hookFailures();
      upstream.seen.length = 0;
      const head = await request(fg.url).head(path).set('Authorization', basic('eve', eve));
      expect({ status: head.status, hookFailures: hookFailures() - before }).toEqual({ status: get.status, hookFailures: 0 });
      expect(head.headers['content-length']).toBe(get.headers['content-length']);
      expect(head.text ?? '').toBe('');
      expect(upstream.seen.map((r) => r.method)).toEqual(['GET']);
    },
  );

  it('tells the filtered length, not MLflow’s (which would tell the size of what is withheld)', async () => {
    const head = await request(fg.url).head('/api/3.0/mlflow/gateway/secrets/list').set('Authorization', basic('eve', eve));
    expect(head.status).toBe(200);
    expect(Number(head.headers['content-length'])).toBeLessThan(Buffer.byteLength(JSON.stringify(HIDDEN)));
  });

  it('a HEAD on a route without such a hook stays a HEAD towards MLflow', async () => {
    upstream.seen.length = 0;
    const head = await request(fg.url).head('/api/2.0/mlflow/experiments/get?experiment_id=0').set('Authorization', adminAuth());
    expect(head.status).toBe(200);
    expect(upstream.seen.map((r) => r.method)).toEqual(['HEAD']);
  });
});
