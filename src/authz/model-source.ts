import { forbidden } from '../errors.js';
import type { MlflowLookups } from './mlflow-lookups.js';
import { bodyLeavesOf, experimentRefs } from './resolve.js';
import type { ResourceRef } from './types.js';
import { experimentSegmentOf } from '../workspaces/artifact-paths.js';

/** What MLflow's client sends as the source of a prompt version: it names no artifacts at all. */
const PROMPT_SOURCE_PLACEHOLDER = 'dummy-source';

/** Every non-empty value of a body field, under either spelling MLflow accepts (`run_id`, `runId`). */
const texts = (body: unknown, field: string): string[] =>
  bodyLeavesOf(body, field).filter((v): v is string => typeof v === 'string' && v !== '');

/**
 * The experiment of a served artifact path (what follows `mlflow-artifacts:/`): its first segment, or
 * with MLflow's workspaces on (`workspace`: the request's) the one after `workspaces/<workspace>/`,
 * where MLflow keeps every experiment's artifacts in that mode. A prefix naming another workspace is
 * refused: the decision would be on this workspace's experiment of that id, the artifacts another's.
 * Undefined when no experiment id in decimal leads a further segment.
 */
function servedExperiment(path: string, workspace: string | undefined): string | undefined {
  const segments = path.split('/');
  const found = experimentSegmentOf(segments, workspace);
  if ('problem' in found) throw forbidden(`Permission denied: the model version source is not in this workspace's artifacts (${found.problem})`, 'model-source-unverifiable');
  const id = segments[found.at];
  return id !== undefined && /^[0-9]+$/.test(id) && segments.length > found.at + 1 ? id : undefined;
}

/**
 * The experiments a new model version copies from: its `run_id`, `model_id` and `source`. A source
 * flowgate cannot tie to an experiment (a bucket, a local path) is refused for non-admins, since
 * registering it would publish artifacts nobody checked. `workspace`: the request's, when MLflow runs
 * with workspaces (its artifact paths then start `workspaces/<workspace>/`).
 */
export async function modelVersionSourceRefs(body: unknown, lookups: MlflowLookups, workspace?: string): Promise<ResourceRef[]> {
  const experiments = new Set<string>();
  for (const runId of texts(body, 'run_id')) experiments.add(await lookups.experimentOfRun(runId));
  for (const modelId of texts(body, 'model_id')) experiments.add(await lookups.experimentOfLoggedModel(modelId));
  for (const source of texts(body, 'source')) {
    if (source === PROMPT_SOURCE_PLACEHOLDER) continue;
    let m: RegExpMatchArray | null;
    let served: string | undefined;
    if ((m = source.match(/^runs:\/([^/]+)(\/|$)/))) experiments.add(await lookups.experimentOfRun(m[1]!));
    else if ((m = source.match(/^models:\/(m-[^/]+)(\/|$)/))) experiments.add(await lookups.experimentOfLoggedModel(m[1]!));
    else if ((m = source.match(/^mlflow-artifacts:(?:\/\/[^/]*)?\/(.*)$/s)) && (served = servedExperiment(m[1]!, workspace)) !== undefined) experiments.add(served);
    else throw forbidden('Permission denied: the model version source is not an MLflow run, logged model or served artifact path', 'model-source-unverifiable');
    if (source.includes('..')) throw forbidden('Permission denied: the model version source contains ..', 'model-source-unverifiable');
  }
  return experimentRefs(experiments);
}
