import type { Caller } from './http.js';
import { ARTIFACTS, V2, V3, type World } from './world.js';

/**
 * Everything MLflow (and flowgate's grants) hold for a world, read directly as the administrator:
 * two snapshots differ when an attack changed, moved, added to or re-granted any of it.
 */
export type Snapshot = Record<string, string>;

async function artifactTree(mlflow: Caller, path: string, out: Snapshot, depth = 0): Promise<void> {
  const listed = await mlflow('GET', ARTIFACTS, { query: { path } });
  const files = (listed.json?.files ?? []) as Array<{ path: string; is_dir: boolean; file_size?: string }>;
  out[`artifacts:${path}`] = JSON.stringify(files.map((f) => f.path).sort());
  for (const f of files) {
    const full = `${path}/${f.path}`;
    if (f.is_dir) {
      if (depth < 6) await artifactTree(mlflow, full, out, depth + 1);
    } else out[`file:${full}`] = (await mlflow('GET', `${ARTIFACTS}/${full}`)).text;
  }
}

/** `mlflow` reads MLflow directly; `grants` reads flowgate's admin API (omitted for control worlds). */
export async function snapshotWorld(world: World, mlflow: Caller, grants?: Caller): Promise<Snapshot> {
  const s: Snapshot = {};
  const keep = async (key: string, reply: Promise<{ status: number; text: string }>) => {
    const r = await reply;
    s[key] = `${r.status} ${r.text}`;
  };
  const exp = world.experimentId;
  await keep('experiment', mlflow('GET', `${V2}/experiments/get`, { query: { experiment_id: exp } }));
  await keep('runs', mlflow('POST', `${V2}/runs/search`, { body: { experiment_ids: [exp], run_view_type: 'ALL' } }));
  await keep('run', mlflow('GET', `${V2}/runs/get`, { query: { run_id: world.runId } }));
  await keep('logged-models', mlflow('POST', `${V2}/logged-models/search`, { body: { experiment_ids: [exp] } }));
  await keep('logged-model', mlflow('GET', `${V2}/logged-models/${world.loggedModelId}`));
  await keep(
    'traces',
    mlflow('POST', `${V3}/traces/search`, {
      body: { locations: [{ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: exp } }], max_results: 100 },
    }),
  );
  for (const id of [world.artifactTraceId, world.storeTraceId]) {
    await keep(`trace:${id}`, mlflow('GET', `${V3}/traces/${id}`));
    await keep(`trace-data:${id}`, mlflow('GET', '/ajax-api/3.0/mlflow/get-trace-artifact', { query: { request_id: id } }));
  }
  await keep('datasets', mlflow('POST', `${V3}/datasets/search`, { body: { experiment_ids: [exp] } }));
  for (const id of [world.datasetId, world.sharedDatasetId]) {
    await keep(`dataset:${id}`, mlflow('GET', `${V3}/datasets/${id}`));
    await keep(`dataset-experiments:${id}`, mlflow('GET', `${V3}/datasets/${id}/experiment-ids`));
  }
  for (const name of [world.modelName, world.promptName]) {
    await keep(`model:${name}`, mlflow('GET', `${V2}/registered-models/get`, { query: { name } }));
    await keep(`versions:${name}`, mlflow('GET', `${V2}/model-versions/search`, { query: { filter: `name='${name}'` } }));
  }
  await artifactTree(mlflow, exp, s);
  if (grants) {
    await keep('grants:experiment', grants('GET', `${V2}/permissions/experiments/${exp}/users`));
    await keep('grants:experiment-groups', grants('GET', `${V2}/permissions/experiments/${exp}/groups`));
    await keep('grants:model', grants('GET', `${V2}/permissions/registered-models/${world.modelName}/users`));
    await keep('grants:prompt', grants('GET', `${V2}/permissions/prompts/${world.promptName}/users`));
  }
  return s;
}

/** The keys whose content differs, with a short view of each side. */
export function snapshotDiff(before: Snapshot, after: Snapshot): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  const diffs: string[] = [];
  for (const key of keys) {
    if (before[key] === after[key]) continue;
    diffs.push(`${key}: ${(before[key] ?? '<absent>').slice(0, 300)} ⇒ ${(after[key] ?? '<absent>').slice(0, 300)}`);
  }
  return diffs;
}
