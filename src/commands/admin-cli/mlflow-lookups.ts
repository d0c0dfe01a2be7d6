import { ApiError, type AdminClient } from './client.js';

const isMissing = (e: unknown) => e instanceof ApiError && (e.status === 404 || e.errorCode === 'RESOURCE_DOES_NOT_EXIST');

/** An experiment's id from its id or name (through flowgate, so the caller needs READ on it); undefined if MLflow has none. */
export async function findExperiment(client: AdminClient, idOrName: string): Promise<{ id: string; name: string } | undefined> {
  try {
    const path = /^\d+$/.test(idOrName)
      ? `experiments/get?experiment_id=${encodeURIComponent(idOrName)}`
      : `experiments/get-by-name?experiment_name=${encodeURIComponent(idOrName)}`;
    const { experiment } = await client.call<{ experiment: { experiment_id: string; name: string } }>('GET', path);
    return { id: experiment.experiment_id, name: experiment.name };
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
}

export async function createExperiment(client: AdminClient, name: string): Promise<string> {
  const { experiment_id } = await client.call<{ experiment_id: string }>('POST', 'experiments/create', { name });
  return experiment_id;
}

/** Whether MLflow has a registered model (or prompt: MLflow keeps prompts as tagged registered models) of that name. */
export async function registeredModelExists(client: AdminClient, name: string): Promise<boolean> {
  try {
    await client.call('GET', `registered-models/get?name=${encodeURIComponent(name)}`);
    return true;
  } catch (e) {
    if (isMissing(e)) return false;
    throw e;
  }
}
