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
