import { ApiError, type AdminClient } from './client.js';
import { UsageError } from './connection.js';

const isMissing = (e: unknown) => e instanceof ApiError && (e.status === 404 || e.errorCode === 'RESOURCE_DOES_NOT_EXIST');

/** An argument MLflow could take for an experiment id: it may as well be an experiment's name (MLflow allows `2024`). */
export const isDigits = (s: string) => /^\d+$/.test(s);

interface Experiment {
  readonly id: string;
  readonly name: string;
}

async function experimentAt(client: AdminClient, path: string): Promise<Experiment | undefined> {
  try {
    const { experiment } = await client.call<{ experiment: { experiment_id: string; name: string } }>('GET', path);
    return { id: experiment.experiment_id, name: experiment.name };
  } catch (e) {
    if (isMissing(e)) return undefined;
    throw e;
  }
}

const experimentById = (client: AdminClient, id: string) => experimentAt(client, `experiments/get?experiment_id=${encodeURIComponent(id)}`);
const experimentByName = (client: AdminClient, name: string) => experimentAt(client, `experiments/get-by-name?experiment_name=${encodeURIComponent(name)}`);

/**
 * An experiment's id from its id or name (through flowgate, so the caller needs READ on it); undefined if MLflow has none.
 * Digits are read as an id only: an operator's argument goes through {@link experimentNamed} instead.
 */
export async function findExperiment(client: AdminClient, idOrName: string): Promise<Experiment | undefined> {
  return isDigits(idOrName) ? experimentById(client, idOrName) : experimentByName(client, idOrName);
}

/**
 * The experiment an operator's ID-OR-NAME argument names. Digits are looked up both as an id and as a
 * name: `2024` may mean the experiment named "2024", and reading it as an id alone would grant on
 * whichever experiment has id 2024. When both exist and are two experiments, nothing is guessed: a
 * usage error names both (and how to name each unambiguously). Undefined when MLflow has neither.
 */
export async function experimentNamed(client: AdminClient, idOrName: string): Promise<Experiment | undefined> {
  if (!isDigits(idOrName)) return experimentByName(client, idOrName);
  const byId = await experimentById(client, idOrName);
  const byName = await experimentByName(client, idOrName);
  if (byId && byName && byId.id !== byName.id)
    throw new UsageError(
      `'${idOrName}' names two experiments: id ${byId.id} (named '${byId.name}') and the one named '${byName.name}' (id ${byName.id}); ` +
        `nothing was changed. Give ${byName.id} for the experiment named '${byName.name}', or the name '${byId.name}' for id ${byId.id}`,
    );
  return byId ?? byName;
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
