/**
 * A scorer's identity. MLflow names a scorer by its experiment and its name (unique within the
 * experiment), and its basic-auth keys a scorer's grants `<experiment_id>/<name>`. flowgate's id for
 * one is the same pair, the name as MLflow stores it: an experiment id is plain decimal (flowgate lets
 * no other spelling through), so the first `/` splits the id whatever the name holds, and name
 * patterns read as names (`12/team-*`, or `12/*` for every scorer of experiment 12). MLflow
 * percent-encodes the name in its key for the same split; flowgate's experiment part makes that
 * unnecessary.
 */

/** MLflow's experiment ids as flowgate lets them through: plain decimal, no sign, padding or leading zero. */
const EXPERIMENT_ID = /^(0|[1-9][0-9]{0,18})$/;
const CONTROL = /[\u0000-\u001f\u007f]/;
const MAX_NAME = 500;

export interface ScorerIdentity {
  readonly experimentId: string;
  readonly name: string;
}

/** Why MLflow would not store this as a scorer's name (`validate_scorer_name`: empty or blank), or why flowgate refuses it. */
export function scorerNameProblem(name: unknown): string | undefined {
  if (typeof name !== 'string' || name.trim() === '') return 'a scorer name must be a non-blank string';
  if (name.length > MAX_NAME) return `a scorer name must be at most ${MAX_NAME} characters`;
  if (CONTROL.test(name)) return 'a scorer name must not contain control characters';
  return undefined;
}

/** Why the text is not an experiment id in the one spelling flowgate decides on, or undefined. */
export function experimentIdProblem(id: unknown): string | undefined {
  return typeof id === 'string' && EXPERIMENT_ID.test(id) ? undefined : 'an experiment id must be plain decimal (no sign, blank or leading zero)';
}

/** The id of the scorer. */
export const scorerId = ({ experimentId, name }: ScorerIdentity): string => `${experimentId}/${name}`;

/** The experiment and name an id names, or undefined when it is not a scorer's id. */
export function parseScorerId(id: string): ScorerIdentity | undefined {
  const slash = id.indexOf('/');
  if (slash < 0) return undefined;
  const identity = { experimentId: id.slice(0, slash), name: id.slice(slash + 1) };
  return experimentIdProblem(identity.experimentId) === undefined && scorerNameProblem(identity.name) === undefined ? identity : undefined;
}

/** Why the text is not a scorer's id, or undefined when it is one. */
export function scorerIdProblem(id: string): string | undefined {
  if (parseScorerId(id) !== undefined) return undefined;
  return `'${id}' is not a scorer: write <experiment_id>/<name> (the experiment id in plain decimal, a non-blank name)`;
}
