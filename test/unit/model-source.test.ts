import { describe, expect, it } from 'vitest';
import { modelVersionSourceRefs } from '../../src/authz/model-source.js';
import type { MlflowLookups } from '../../src/authz/mlflow-lookups.js';

const lookups: MlflowLookups = {
  experimentOfRun: async (id) => ({ r1: '1', r2: '2' })[id] ?? Promise.reject(new Error('unknown run')),
  experimentOfLoggedModel: async (id) => ({ 'm-abc': '3' })[id] ?? Promise.reject(new Error('unknown model')),
  experimentOfTrace: async () => '0',
  experimentIdByName: async () => '0',
  isPrompt: async () => false,
  experimentsOfDataset: async () => [],
  experimentOfOwned: async () => '0',
};

describe('modelVersionSourceRefs', () => {
  it.each([
    [{ source: 'runs:/r1/model' }, ['1']],
    [{ source: 'models:/m-abc' }, ['3']],
    [{ source: 'mlflow-artifacts:/4/r9/artifacts/model' }, ['4']],
    [{ source: 'mlflow-artifacts://host:5000/5/r9/artifacts/model' }, ['5']],
    [{ source: 'mlflow-artifacts:/1/r1/artifacts/model', run_id: 'r2' }, ['2', '1']],
    [{ source: 'runs:/r1/model', model_id: 'm-abc' }, ['3', '1']],
    [{}, []],
    [{ source: 'dummy-source' }, []],
  ])('%j reads experiments %j', async (body, ids) => {
    expect((await modelVersionSourceRefs(body, lookups)).map((r) => r.id).sort()).toEqual([...ids].sort());
  });

  it.each([['s3://bucket/model'], ['/tmp/model'], ['file:///etc'], ['mlflow-artifacts:/1/../2/x'], ['http://evil/model']])(
    'refuses an unverifiable source %s',
    async (source) => {
      await expect(modelVersionSourceRefs({ source }, lookups)).rejects.toMatchObject({ status: 403 });
    },
  );
});

describe("modelVersionSourceRefs under MLflow's workspaces (served artifacts at workspaces/<ws>/<experiment id>)", () => {
  it.each([
    ['ws-a', 'mlflow-artifacts:/workspaces/ws-a/4/r9/artifacts/model', '4'],
    ['ws-a', 'mlflow-artifacts://host:5000/workspaces/ws-a/5/r9/artifacts/model', '5'],
    ['default', 'mlflow-artifacts:/workspaces/default/6/models/m-abc/artifacts', '6'],
    // The unprefixed form is read as it was (MLflow roots it in the request's workspace).
    ['ws-a', 'mlflow-artifacts:/4/r9/artifacts/model', '4'],
    ['default', 'mlflow-artifacts:/4/r9/artifacts/model', '4'],
  ])('in %s, %s reads experiment %s', async (workspace, source, id) => {
    expect((await modelVersionSourceRefs({ source }, lookups, workspace)).map((r) => r.id)).toEqual([id]);
  });

  it.each([
    // Another workspace's artifacts: decided here, this workspace's experiment of that id would be checked.
    ['ws-a', 'mlflow-artifacts:/workspaces/ws-b/4/r9/artifacts/model'],
    ['ws-a', 'mlflow-artifacts:/workspaces/default/4/r9/artifacts/model'],
    ['default', 'mlflow-artifacts:/workspaces/ws-a/4/r9/artifacts/model'],
    ['ws-a', 'mlflow-artifacts:/workspaces/WS-A/4/r9/artifacts/model'],
    // A prefix naming no workspace or no experiment, or climbing out of it.
    ['ws-a', 'mlflow-artifacts:/workspaces//4/r9/artifacts/model'],
    ['ws-a', 'mlflow-artifacts:/workspaces/ws-a/4'],
    ['ws-a', 'mlflow-artifacts:/workspaces/ws-a/'],
    ['ws-a', 'mlflow-artifacts:/workspaces/ws-a/x/4/r9'],
    ['ws-a', 'mlflow-artifacts:/workspaces/ws-a/../ws-b/4/r9/artifacts/model'],
    ['ws-a', 'mlflow-artifacts:/workspaces/ws-a/4/../../ws-b/4/r9/artifacts/model'],
    ['ws-a', 'mlflow-artifacts:/workspaces%2Fws-a%2F4/r9/artifacts/model'],
  ])('in %s, refuses %s', async (workspace, source) => {
    await expect(modelVersionSourceRefs({ source }, lookups, workspace)).rejects.toMatchObject({ status: 403, reason: 'model-source-unverifiable' });
  });

  it('without workspaces a workspaces/ prefix names no experiment: refused as before', async () => {
    for (const source of ['mlflow-artifacts:/workspaces/default/4/r9/artifacts/model', 'mlflow-artifacts:/workspaces/ws-a/4/r9/artifacts/model'])
      await expect(modelVersionSourceRefs({ source }, lookups), source).rejects.toMatchObject({ status: 403, reason: 'model-source-unverifiable' });
  });
});
