import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';

/** One flowgate serving MLflow tracking routes and keyed inference routes side by side. */
describe('inference routes in the main flowgate', () => {
  const KEY = 'inference-key-0123456789abcdef';
  let fg: TestFlowgate;
  let mlflow: Awaited<ReturnType<typeof startStubUpstream>>;
  let model: Awaited<ReturnType<typeof startStubUpstream>>;
  const dir = mkdtempSync(join(tmpdir(), 'fg-inf-'));

  beforeAll(async () => {
    mlflow = await startStubUpstream();
    model = await startStubUpstream(() => ({ status: 200, body: { outputs: [{ name: 'y', data: [1] }] } }));
    const file = join(dir, 'inference.yaml');
    writeFileSync(file, `routes:\n  - name: iris\n    upstream: ${model.url}\n    pathPrefix: /v2/models/iris\n`);
    fg = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_INFERENCE_CONFIG_FILE: file,
      FLOWGATE_INFERENCE_API_KEYS: KEY,
    });
  });
  afterAll(async () => {
    await fg.close();
    await mlflow.close();
    await model.close();
    removeDir(fg.dir);
    removeDir(dir);
  });

  it('forwards a keyed inference call without the key, refuses an unkeyed one, and keeps serving the tracking side', async () => {
    const ok = await request(fg.url).post('/v2/models/iris/infer').set('x-api-key', KEY).send({ inputs: [] });
    expect(ok.status).toBe(200);
    expect(ok.body.outputs[0].data).toEqual([1]);
    expect(model.seen).toHaveLength(1);
    expect(model.seen[0]!.headers['x-api-key']).toBeUndefined();
    const no = await request(fg.url).post('/v2/models/iris/infer').send({ inputs: [] });
    expect(no.status).toBe(401);
    expect(no.body.error_code).toBe('UNAUTHENTICATED');
    const wrong = await request(fg.url).post('/v2/models/iris/infer').set('x-api-key', 'wrong-key-000000').send({});
    expect(wrong.status).toBe(401);
    expect(model.seen).toHaveLength(1);
    const users = await request(fg.url).get('/api/2.0/mlflow/permissions/users').set('Authorization', adminAuth());
    expect(users.status).toBe(200);
    const scrape = await fetch(fg.metricsUrl).then((r) => r.text());
    expect(scrape).toMatch(/flowgate_inference_requests_total\{route="iris",result="allowed"\} 1/);
    expect(scrape).toMatch(/flowgate_inference_requests_total\{route="iris",result="missing_key"\} 1/);
    expect(scrape).toMatch(/flowgate_inference_requests_total\{route="iris",result="wrong_key"\} 1/);
  });
});
