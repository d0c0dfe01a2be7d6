import { forbidden } from '../errors.js';
import type { MlflowLookups } from './mlflow-lookups.js';
import type { ResourceRef } from './types.js';

/** What MLflow's client sends as the source of a prompt version: it names no artifacts at all. */
const PROMPT_SOURCE_PLACEHOLDER = 'dummy-source';

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/**
 * The experiments a new model version copies from: its `run_id`, `model_id` and `source`. A source
 * flowgate cannot tie to an experiment (a bucket, a local path) is refused for non-admins, since
 * registering it would publish artifacts nobody checked.
 */
export async function modelVersionSourceRefs(body: unknown, lookups: MlflowLookups): Promise<ResourceRef[]> {
  const b = obj(body);
  const experiments = new Set<string>();
  const runId = text(b.run_id);
  const modelId = text(b.model_id);
  const source = text(b.source);
  if (runId) experiments.add(await lookups.experimentOfRun(runId));
  if (modelId) experiments.add(await lookups.experimentOfLoggedModel(modelId));
  if (source && source !== PROMPT_SOURCE_PLACEHOLDER) {
    let m: RegExpMatchArray | null;
    if ((m = source.match(/^runs:\/([^/]+)(\/|$)/))) experiments.add(await lookups.experimentOfRun(m[1]!));
    else if ((m = source.match(/^models:\/(m-[^/]+)(\/|$)/))) experiments.add(await lookups.experimentOfLoggedModel(m[1]!));
    else if ((m = source.match(/^mlflow-artifacts:(?:\/\/[^/]*)?\/([0-9]+)\//))) experiments.add(m[1]!);
    else throw forbidden('Permission denied: the model version source is not an MLflow run, logged model or served artifact path', 'model-source-unverifiable');
    if (source.includes('..')) throw forbidden('Permission denied: the model version source contains ..', 'model-source-unverifiable');
  }
  return [...experiments].map((id) => ({ kind: 'experiment', id }));
}
