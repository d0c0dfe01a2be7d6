import type { Caller } from './http.js';
import { V2, V3 } from './world.js';

/*
 * References MLflow keeps from one object to another, read straight from MLflow: a trace linked to a
 * run, a logged model naming its source run, a run naming logged models as inputs or outputs. None
 * of them shows in a world's snapshot, since they live on the referring object.
 */

/** Traces of `experimentId` that MLflow lists under `runId` (linked to it, or naming it as their source run). */
export async function tracesUnderRun(mlflow: Caller, experimentId: string, runId: string): Promise<string[]> {
  const found = await mlflow('POST', `${V3}/traces/search`, {
    body: {
      locations: [{ type: 'MLFLOW_EXPERIMENT', mlflow_experiment: { experiment_id: experimentId } }],
      filter: `metadata.\`mlflow.sourceRun\` = '${runId}'`,
      max_results: 100,
    },
  });
  if (found.status !== 200) throw new Error(`searching traces under run ${runId} → ${found.status} ${found.text.slice(0, 200)}`);
  return ((found.json?.traces ?? []) as Array<{ trace_id: string }>).map((t) => t.trace_id);
}

/** Logged models of `experimentId` whose source run is `runId`. */
export async function loggedModelsFromRun(mlflow: Caller, experimentId: string, runId: string): Promise<string[]> {
  const found = await mlflow('POST', `${V2}/logged-models/search`, { body: { experiment_ids: [experimentId], filter: `source_run_id = '${runId}'` } });
  if (found.status !== 200) throw new Error(`searching logged models of run ${runId} → ${found.status} ${found.text.slice(0, 200)}`);
  return ((found.json?.models ?? []) as Array<{ info: { model_id: string } }>).map((m) => m.info.model_id);
}

/** The logged models a run names as its inputs or outputs. */
export async function modelsNamedByRun(mlflow: Caller, runId: string): Promise<string[]> {
  const run = (await mlflow('GET', `${V2}/runs/get`, { query: { run_id: runId } })).json?.run;
  const named = [...(run?.inputs?.model_inputs ?? []), ...(run?.outputs?.model_outputs ?? [])] as Array<{ model_id: string }>;
  return named.map((m) => m.model_id);
}
