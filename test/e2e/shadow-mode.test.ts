import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { eventually, scrape, sum } from '../helpers/prom.js';

const GET_ROUTE = '/api/2.0/mlflow/experiments/get';

describe('shadow mode against the real MLflow', () => {
  let mlflow: MlflowServer;
  let shadow: TestFlowgate;
  let enforcing: TestFlowgate;
  let bob: string;
  let experimentId: string;

  beforeAll(async () => {
    mlflow = await startMlflowServer();
    shadow = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_ENFORCE: 'false' });
    const created = await request(shadow.url)
      .post('/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .send({ username: 'bob', display_name: 'Bob', is_admin: false, is_service_account: false });
    expect(created.status).toBe(201);
    const minted = await request(shadow.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'bob' });
    bob = basic('bob', minted.body.token as string);
    const experiment = await request(shadow.url).post('/api/2.0/mlflow/experiments/create').set('Authorization', adminAuth()).send({ name: 'shadowed-secret' });
    expect(experiment.status).toBe(200);
    experimentId = experiment.body.experiment_id as string;
    // A second, enforcing flowgate on the same store and MLflow: the same decision, enforced.
    enforcing = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url }, shadow.dir);
  }, 240_000);
  afterAll(async () => {
    await enforcing?.close();
    await shadow?.close();
    await mlflow?.stop();
    if (shadow) removeDir(shadow.dir);
  });

  it('forwards a read enforcement denies, answers with MLflow’s answer, and counts it as would_deny', async () => {
    const path = `${GET_ROUTE}?experiment_id=${experimentId}`;
    const refused = await request(enforcing.url).get(path).set('Authorization', bob);
    expect(refused.status).toBe(403);
    expect(refused.body.error_code).toBe('PERMISSION_DENIED');

    const before = (await scrape(shadow.metricsUrl)).samples;
    const forwarded = await request(shadow.url).get(path).set('Authorization', bob);
    expect(forwarded.status).toBe(200);
    expect(forwarded.body.experiment).toMatchObject({ experiment_id: experimentId, name: 'shadowed-secret' });

    await eventually(async () => {
      const after = (await scrape(shadow.metricsUrl)).samples;
      const match = { decision: 'would_deny', route: GET_ROUTE, resource_type: 'experiment' };
      expect(sum(after, 'flowgate_authz_decisions_total', match) - sum(before, 'flowgate_authz_decisions_total', match)).toBe(1);
      expect(sum(after, 'flowgate_enforcing')).toBe(0);
    });
  });

  it('forwards a denied read by name unfiltered, where enforcing refuses it', async () => {
    const path = `/api/2.0/mlflow/experiments/get-by-name?experiment_name=shadowed-secret`;
    expect((await request(enforcing.url).get(path).set('Authorization', bob)).status).toBe(403);
    const forwarded = await request(shadow.url).get(path).set('Authorization', bob);
    expect(forwarded.status).toBe(200);
    expect(forwarded.body.experiment.experiment_id).toBe(experimentId);
  });
});
