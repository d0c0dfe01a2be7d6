import { badRequest } from '../errors.js';
import { scorerNameProblem } from '../resources/scorer-identity.js';
import type { IdSource } from './types.js';

/*
 * The registered scorers a GenAI evaluation (`genai/evaluate/invoke`) loads, read from its body the way
 * MLflow's handler reads them: where `scorer_versions[i]` is an integer, MLflow parses the JSON text
 * `serialized_scorers[i]`, takes its `name`, and runs that version of the experiment's scorer of that
 * name in place of the text. Anything MLflow could read another way, or that flowgate cannot read
 * exactly (a version past 2^53, which JSON.parse rounds), is refused rather than guessed.
 */

export interface RegisteredScorer {
  readonly name: string;
  /** The version MLflow loads: the one named, or the highest it has (`latest`, a name given alone). */
  readonly version: number | 'latest';
}

/**
 * The `versions` of a `registered_scorers` source whose list (`field`) holds bare scorer names, no
 * versions beside them: MLflow loads each name's latest version. A prompt optimization's `config.scorers`
 * is one: its worker takes each name that is not a built-in scorer as `get_scorer(name=…)` of the
 * experiment, the highest version (mlflow/genai/optimize/job.py `_load_scorers`). No field of MLflow's is
 * spelt this way.
 */
export const LATEST_OF_EACH = '(latest of each)';

/** More registered scorers than this in one evaluation is refused rather than looked up one by one. */
export const MAX_REGISTERED_SCORERS = 100;

const invalid = (message: string) => badRequest(`Invalid value for parameter 'scorer_versions': ${message}`);

/** The camelCase twin of a field MLflow reads by its snake_case name only: its presence is refused. */
const camel = (name: string) => name.replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());

/** The scorer name MLflow reads out of one serialized scorer (`json.loads(text)["name"]`). */
function nameIn(text: unknown, index: number): string {
  if (typeof text !== 'string') throw invalid(`the scorer at index ${index} has a version, so its entry in 'serialized_scorers' must be JSON text`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw invalid(`the scorer at index ${index} has a version, so its entry in 'serialized_scorers' must be valid JSON`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw invalid(`the scorer at index ${index} has a version, so its entry in 'serialized_scorers' must be a JSON object`);
  const name = (parsed as Record<string, unknown>).name;
  const problem = scorerNameProblem(name);
  if (problem !== undefined) throw invalid(`the registered scorer at index ${index}: ${problem}`);
  return name as string;
}

/**
 * Every registered scorer the body names (each name and version once), from a body already read as a
 * JSON object. `field` and `versions` are the two parallel lists; none when `versions` is absent.
 */
export function registeredScorersIn(body: Record<string, unknown> | undefined, field: string, versions: string): RegisteredScorer[] {
  if (body === undefined) return [];
  for (const name of [field, versions])
    if (camel(name) !== name && Object.hasOwn(body, camel(name))) throw badRequest(`Parameter '${camel(name)}' is not read here: write '${name}'`);
  if (!Object.hasOwn(body, versions)) return [];
  const listed = body[versions];
  const scorers = body[field];
  if (!Array.isArray(listed)) throw invalid('must be a list of integers or nulls');
  if (!Array.isArray(scorers)) throw badRequest(`Invalid value for parameter '${field}': must be a list`);
  if (listed.length !== scorers.length) throw invalid(`must have the same length as '${field}'`);
  const found = new Map<string, RegisteredScorer>();
  listed.forEach((version: unknown, index) => {
    if (version === null) return;
    // MLflow takes a JSON integer (not a boolean); one JSON.parse cannot hold exactly is refused.
    if (typeof version !== 'number' || !Number.isSafeInteger(version)) throw invalid(`the version at index ${index} must be an integer or null`);
    const name = nameIn(scorers[index], index);
    found.set(JSON.stringify([name, version]), { name, version });
    if (found.size > MAX_REGISTERED_SCORERS) throw invalid(`at most ${MAX_REGISTERED_SCORERS} registered scorers in one evaluation`);
  });
  return [...found.values()];
}

/**
 * The one registered scorer a scorer run (`scorer/invoke`) loads, read as MLflow's handler reads it: a
 * `field` (string) and a `versions` (integer, not a boolean) given together, JSON null being absent; MLflow
 * then runs that stored version in place of the inline `serialized_scorer`. Neither given: none. MLflow
 * has no "latest version" here (one without the other is its 400), so flowgate never guesses one.
 */
export function registeredScorerNamedIn(body: Record<string, unknown> | undefined, field: string, versions: string): RegisteredScorer[] {
  if (body === undefined) return [];
  for (const name of [field, versions])
    if (camel(name) !== name && Object.hasOwn(body, camel(name))) throw badRequest(`Parameter '${camel(name)}' is not read here: write '${name}'`);
  const name = body[field] ?? null;
  const version = body[versions] ?? null;
  if (name === null && version === null) return [];
  if (name === null || version === null) throw badRequest(`Parameters '${field}' and '${versions}' must be given together`);
  const problem = scorerNameProblem(name);
  if (problem !== undefined) throw badRequest(`Invalid value for parameter '${field}': ${problem}`);
  // One JSON.parse cannot hold exactly (past 2^53) would be looked up as another version than MLflow loads.
  if (typeof version !== 'number' || !Number.isSafeInteger(version)) throw badRequest(`Invalid value for parameter '${versions}': must be an integer`);
  return [{ name: name as string, version }];
}

/**
 * Each scorer a list of bare names (`LATEST_OF_EACH`) makes MLflow load, at its latest version: the names
 * as the request gives them (read where MLflow reads the list), each once. A name MLflow would not store is
 * a 400, as is a list longer than flowgate looks up one by one.
 */
export function latestOfEach(names: readonly string[], field: string): RegisteredScorer[] {
  const found = new Map<string, RegisteredScorer>();
  for (const name of names) {
    const problem = scorerNameProblem(name);
    if (problem !== undefined) throw badRequest(`Invalid value for parameter '${field}': ${problem}`);
    found.set(name, { name, version: 'latest' });
    if (found.size > MAX_REGISTERED_SCORERS) throw badRequest(`Invalid value for parameter '${field}': at most ${MAX_REGISTERED_SCORERS} scorers in one request`);
  }
  return [...found.values()];
}

/**
 * The registered scorers a `registered_scorers` source names in a body already read as a JSON object. A
 * `LATEST_OF_EACH` source's names are read by the resolver (src/authz/resolve.ts), where every list is.
 */
export function registeredScorersOf(body: Record<string, unknown> | undefined, id: Extract<IdSource, { kind: 'registered_scorers' }>): RegisteredScorer[] {
  if (id.versions === LATEST_OF_EACH) throw new Error(`'${id.field}' names bare scorers: read it with latestOfEach`);
  return id.shape === 'one' ? registeredScorerNamedIn(body, id.field, id.versions) : registeredScorersIn(body, id.field, id.versions);
}
