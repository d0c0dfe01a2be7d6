import { randomBytes } from 'node:crypto';
import { ok, type Caller } from './http.js';

/**
 * A secret experiment and everything MLflow keeps for it, each piece carrying a marker that starts
 * with `prefix`: a response containing the prefix leaked that piece.
 */
export interface World {
  readonly prefix: string;
  readonly experimentId: string;
  readonly experimentName: string;
  readonly runId: string;
  readonly loggedModelId: string;
  /** A trace whose spans live in the artifact store (`traces.json`). */
  readonly artifactTraceId: string;
  /** A trace whose spans live in the tracking store (sent over OTLP). */
  readonly storeTraceId: string;
  readonly datasetId: string;
  /** A dataset of this experiment and of `sharedExperimentId` as well. */
  readonly sharedDatasetId: string;
  /** An experiment the attacker may read (granted by the caller of seedWorld where it matters). */
  readonly sharedExperimentId: string;
  readonly modelName: string;
  readonly promptName: string;
}

export const V2 = '/api/2.0/mlflow';
export const V3 = '/api/3.0/mlflow';
export const ARTIFACTS = '/api/2.0/mlflow-artifacts/artifacts';

export const randomHex = (bytes: number) => randomBytes(bytes).toString('hex');
export const newTraceHex = () => randomHex(16);

const keyValues = (attributes: Record<string, string>) => Object.entries(attributes).map(([key, value]) => ({ key, value: { stringValue: value } }));

/** One root span in OTLP JSON; `resource` attributes describe the exporter (MLflow keeps them as trace tags). */
export function otlpJson(traceHex: string, spanName: string, attributes: Record<string, string> = {}, resource: Record<string, string> = {}): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: keyValues(resource) },
        scopeSpans: [
          {
            spans: [
              {
                traceId: traceHex,
                spanId: randomHex(8),
                name: spanName,
                kind: 1,
                startTimeUnixNano: String(Date.now() * 1e6),
                endTimeUnixNano: String(Date.now() * 1e6 + 1e6),
                attributes: keyValues(attributes),
              },
            ],
          },
        ],
      },
    ],
  });
}

export function traceInfo(traceId: string, experimentId: string, tags: Record<string, string> = {}) {
  return {
    trace: {
      trace_info: {
        trace_id: traceId,
        trace_location: { type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: experimentId } },
        request_time: new Date().toISOString(),
        execution_duration: '1s',
        state: 'OK',
        tags,
      },
    },
  };
}

/** Seeds a world through `as` (an administrator via flowgate, or MLflow directly). */
export async function seedWorld(as: Caller, label: string): Promise<World> {
  const tag = randomHex(4);
  const prefix = `SECRET-${label}-${tag}-`;
  const m = (what: string) => `${prefix}${what}`;
  const experimentName = `secret-${label}-${tag}`;

  const experimentId = ok(
    await as('POST', `${V2}/experiments/create`, { body: { name: experimentName, tags: [{ key: 'secret', value: m('experiment-tag') }] } }),
    'create secret experiment',
  ).experiment_id as string;
  const sharedExperimentId = ok(await as('POST', `${V2}/experiments/create`, { body: { name: `shared-${label}-${tag}` } }), 'create shared experiment')
    .experiment_id as string;

  const runId = ok(
    await as('POST', `${V2}/runs/create`, {
      body: { experiment_id: experimentId, run_name: `run-${tag}`, start_time: Date.now(), tags: [{ key: 'secret', value: m('run-tag') }] },
    }),
    'create run',
  ).run.info.run_id as string;
  ok(
    await as('POST', `${V2}/runs/log-batch`, {
      body: {
        run_id: runId,
        params: [{ key: 'secret-param', value: m('param') }],
        metrics: [{ key: m('metric'), value: 0.42, timestamp: Date.now(), step: 0 }],
      },
    }),
    'log params and metrics',
  );
  const runArtifacts = `${ARTIFACTS}/${experimentId}/${runId}/artifacts`;
  ok(await as('PUT', `${runArtifacts}/secret.txt`, { raw: m('artifact') }), 'upload run artifact');
  ok(await as('PUT', `${runArtifacts}/model/MLmodel`, { raw: `flavors: {}\nsecret: ${m('mlmodel')}\n` }), 'upload model files');

  const loggedModelId = ok(
    await as('POST', `${V2}/logged-models`, {
      body: {
        experiment_id: experimentId,
        name: `lm-${tag}`,
        source_run_id: runId,
        tags: [{ key: 'secret', value: m('logged-model-tag') }],
        params: [{ key: 'secret', value: m('logged-model-param') }],
      },
    }),
    'create logged model',
  ).model.info.model_id as string;
  ok(await as('PUT', `${ARTIFACTS}/${experimentId}/models/${loggedModelId}/artifacts/secret.txt`, { raw: m('logged-model-artifact') }), 'upload logged model artifact');

  const artifactTraceId = `tr-${newTraceHex()}`;
  ok(await as('POST', `${V3}/traces`, { body: traceInfo(artifactTraceId, experimentId, { secret: m('trace-tag') }) }), 'start trace');
  ok(
    await as('PUT', `${ARTIFACTS}/${experimentId}/traces/${artifactTraceId}/artifacts/traces.json`, {
      raw: JSON.stringify({ spans: [{ name: m('artifact-span'), context: { span_id: '0x01', trace_id: '0x02' } }] }),
    }),
    'upload trace spans',
  );
  const storeHex = newTraceHex();
  ok(
    await as('POST', '/v1/traces', {
      raw: otlpJson(storeHex, m('store-span')),
      headers: { 'content-type': 'application/json', 'x-mlflow-experiment-id': experimentId },
    }),
    'export OTLP trace',
  );
  const storeTraceId = `tr-${storeHex}`;

  const datasetId = ok(
    await as('POST', `${V3}/datasets/create`, {
      body: { name: `ds-${tag}`, experiment_ids: [experimentId], tags: JSON.stringify({ secret: m('dataset-tag') }) },
    }),
    'create dataset',
  ).dataset.dataset_id as string;
  const sharedDatasetId = ok(
    await as('POST', `${V3}/datasets/create`, {
      body: { name: m('shared-dataset'), experiment_ids: [experimentId, sharedExperimentId], tags: JSON.stringify({ secret: m('shared-dataset-tag') }) },
    }),
    'create shared dataset',
  ).dataset.dataset_id as string;

  const modelName = `secret-model-${label}-${tag}`;
  ok(await as('POST', `${V2}/registered-models/create`, { body: { name: modelName, tags: [{ key: 'secret', value: m('model-tag') }] } }), 'create model');
  ok(
    await as('POST', `${V2}/model-versions/create`, {
      body: { name: modelName, source: `mlflow-artifacts:/${experimentId}/${runId}/artifacts/model`, run_id: runId, tags: [{ key: 'secret', value: m('version-tag') }] },
    }),
    'create model version',
  );
  const promptName = `secret-prompt-${label}-${tag}`;
  ok(
    await as('POST', `${V2}/registered-models/create`, {
      body: { name: promptName, tags: [{ key: 'mlflow.prompt.is_prompt', value: 'true' }, { key: 'secret', value: m('prompt-tag') }] },
    }),
    'create prompt',
  );
  ok(
    await as('POST', `${V2}/model-versions/create`, {
      body: {
        name: promptName,
        source: 'dummy-source',
        tags: [
          { key: 'mlflow.prompt.is_prompt', value: 'true' },
          { key: 'mlflow.prompt.text', value: m('prompt-text') },
        ],
      },
    }),
    'create prompt version',
  );

  return {
    prefix,
    experimentId,
    experimentName,
    runId,
    loggedModelId,
    artifactTraceId,
    storeTraceId,
    datasetId,
    sharedDatasetId,
    sharedExperimentId,
    modelName,
    promptName,
  };
}
