import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { FlowgateError } from '../../src/errors.js';
import { createUpstreamJson, type UpstreamJson } from '../../src/upstream/json-client.js';
import { connectMlflow, type MlflowConnection } from '../../src/upstream/mlflow-connection.js';
import { readMlflowVersion } from '../../src/upstream/mlflow-version.js';
import { adminAuth, basic, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/** Trace look-ups against the pinned MLflow, in both forms, and through flowgate. */
let mlflow: MlflowServer;
let connection: MlflowConnection;
let fg: TestFlowgate;
let experimentId: string;
let otherExperimentId: string;
const TRACE = 'tr-0123456789abcdef0123456789abcdef';
const OTHER_TRACE = 'tr-fedcba9876543210fedcba9876543210';

async function mlflowPost(path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${mlflow.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

const startTrace = (traceId: string, experiment: string) =>
  mlflowPost('/api/3.0/mlflow/traces', {
    trace: {
      trace_info: {
        trace_id: traceId,
        trace_location: { type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: experiment } },
        request_time: '2026-01-01T00:00:00Z',
        state: 'OK',
      },
    },
  });

beforeAll(async () => {
  mlflow = await startMlflowServer();
  connection = connectMlflow({ upstreamUrl: mlflow.url, staticPrefix: '', timeoutMs: 10_000 });
  experimentId = (await mlflowPost('/api/2.0/mlflow/experiments/create', { name: 'traced' })).experiment_id as string;
  otherExperimentId = (await mlflowPost('/api/2.0/mlflow/experiments/create', { name: 'not-shared' })).experiment_id as string;
  await startTrace(TRACE, experimentId);
  await startTrace(OTHER_TRACE, otherExperimentId);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url });
});
afterAll(async () => {
  await fg?.close();
  if (fg) removeDir(fg.dir);
  await connection?.close();
  await mlflow?.stop();
});

/** flowgate's look-ups with the paths they ask MLflow recorded. */
function lookupsTelling(version: () => Promise<string | undefined>) {
  const client = createUpstreamJson(connection);
  const asked: string[] = [];
  const recording: UpstreamJson = {
    call: (method, path, input, context) => {
      asked.push(path);
      return client.call(method, path, input, context);
    },
  };
  return { asked, api: createMlflowLookups({ client: recording, cacheSize: 10, ttlMs: 1_000, readVersion: version }) };
}

describe('trace look-ups against MLflow 3.17.2', () => {
  it('read its /version', async () => {
    expect(await readMlflowVersion(connection)).toBe('3.17.2');
  });

  it('use the v3 route it has', async () => {
    const { asked, api } = lookupsTelling(() => readMlflowVersion(connection));
    expect(await api.experimentOfTrace(TRACE)).toBe(experimentId);
    expect(asked).toEqual([`/api/3.0/mlflow/traces/${TRACE}`]);
  });

  it('read the same experiment through the v2 route, as before MLflow 3.1', async () => {
    const { asked, api } = lookupsTelling(async () => '3.0.1');
    expect(await api.experimentOfTrace(TRACE)).toBe(experimentId);
    expect(asked).toEqual([`/api/2.0/mlflow/traces/${TRACE}/info`]);
  });

  it('tell a missing trace from a missing route in either form, and keep the form', async () => {
    for (const version of ['3.17.2', '3.0.1']) {
      const { asked, api } = lookupsTelling(async () => version);
      const error = await api.experimentOfTrace('tr-00000000000000000000000000000000').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(FlowgateError);
      expect((error as FlowgateError).code).toBe('RESOURCE_DOES_NOT_EXIST');
      expect(asked).toHaveLength(1);
    }
  });

  it('still decide trace requests through flowgate: READ on the experiment reads its trace, not another', async () => {
    const admin = () => request(fg.url);
    await admin().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth())
      .send({ username: 'reader', display_name: 'Reader', is_admin: false, is_service_account: false });
    await admin().post(`/api/2.0/mlflow/permissions/users/reader/experiments/${experimentId}`).set('Authorization', adminAuth()).send({ permission: 'READ' });
    const token = (await admin().patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'reader' })).body.token as string;
    const reader = basic('reader', token);

    const v3 = await request(fg.url).get(`/api/3.0/mlflow/traces/${TRACE}`).set('Authorization', reader);
    expect(v3.status).toBe(200);
    expect(v3.body.trace.trace_info.trace_id).toBe(TRACE);
    const v2 = await request(fg.url).get(`/api/2.0/mlflow/traces/${TRACE}/info`).set('Authorization', reader);
    expect(v2.status).toBe(200);
    expect(v2.body.trace_info.experiment_id).toBe(experimentId);
    expect((await request(fg.url).get(`/api/3.0/mlflow/traces/${OTHER_TRACE}`).set('Authorization', reader)).status).toBe(403);
  });
});
