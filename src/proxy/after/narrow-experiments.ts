import { canonicalExperimentId, spellings } from '../../authz/resolve.js';
import { badRequest } from '../../errors.js';
import { jsonCopy } from '../json-copy.js';

/** Where a search names its experiments, per route: runs and traces searches are narrowed before MLflow sees them. */
export type ExperimentList =
  | { readonly in: 'body'; readonly shape: 'experiment_ids' | 'trace_locations' }
  | { readonly in: 'query'; readonly field: string };

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

/**
 * MLflow before 3.17 reads a JSON body with protobuf's parser, which takes a field's camelCase JSON name
 * (`experimentIds`) as well as its own and lets the later key win; 3.17 on refuses the two together but
 * takes either alone. A field flowgate reads or rewrites by its snake_case name is refused in its other
 * spelling, so MLflow acts on the copy flowgate decided on.
 */
export function refuseCamelTwins(body: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names)
    for (const spelling of spellings(name))
      if (spelling !== name && Object.hasOwn(body, spelling)) throw badRequest(`Parameter '${spelling}' is not read here: write '${name}'`);
}

/**
 * An experiment id a search lists, in the one spelling flowgate decides on. MLflow runs ids through
 * Python's int(), where '01', ' 1', '+1', '1_0' and '١' are experiment 1 (or 10), so only plain decimal
 * text is taken. A JSON integer is its decimal text when JSON.parse holds it exactly (older MLflow, 3.9
 * among them, turns it into that text; 3.17 refuses it itself); anything else is refused.
 */
export function listedExperimentId(id: unknown, field: string): string {
  if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) return String(id);
  if (typeof id !== 'string') throw badRequest(`Parameter '${field}' must be an experiment id in plain decimal`);
  return canonicalExperimentId(id, field);
}

const LOCATION_FIELD = 'locations.mlflow_experiment.experiment_id';

/** The experiment a trace location names (only MLflow experiment locations are searched through flowgate). */
function locationExperiment(location: unknown): string {
  const loc = obj(location);
  refuseCamelTwins(loc, ['mlflow_experiment']);
  const experiment = obj(loc.mlflow_experiment);
  refuseCamelTwins(experiment, ['experiment_id']);
  const id = experiment.experiment_id;
  if (id === undefined) throw badRequest('Only MLflow experiment trace locations are supported');
  return listedExperimentId(id, LOCATION_FIELD);
}

/** Every experiment the search names, each in plain decimal; any other spelling MLflow would read is a 400. */
export function listedExperiments(where: ExperimentList, body: unknown, query: URLSearchParams): string[] {
  // MLflow reads a GET's query by the fields' own names only.
  if (where.in === 'query') return query.getAll(where.field).map((id) => canonicalExperimentId(id, where.field));
  const b = obj(body);
  refuseCamelTwins(b, ['experiment_ids']);
  const ids: string[] = [];
  if (b.experiment_ids !== undefined) {
    if (!Array.isArray(b.experiment_ids)) throw badRequest("'experiment_ids' must be a list");
    for (const id of b.experiment_ids) ids.push(listedExperimentId(id, 'experiment_ids'));
  }
  if (where.shape === 'trace_locations' && b.locations !== undefined) {
    if (!Array.isArray(b.locations)) throw badRequest("'locations' must be a list");
    for (const loc of b.locations) ids.push(locationExperiment(loc));
  }
  return ids;
}

/** The same request naming only `keep` (ids as listedExperiments gives them; the request was read by it first). */
export function narrowedRequest(
  where: ExperimentList,
  body: unknown,
  query: URLSearchParams,
  keep: ReadonlySet<string>,
): { body?: Buffer; search?: string } {
  if (where.in === 'query') {
    const q = new URLSearchParams();
    for (const [k, v] of query) if (k !== where.field || keep.has(v)) q.append(k, v);
    return { search: q.toString() };
  }
  const b = jsonCopy(obj(body));
  if (Array.isArray(b.experiment_ids)) b.experiment_ids = b.experiment_ids.filter((id) => keep.has(listedExperimentId(id, 'experiment_ids')));
  if (where.shape === 'trace_locations' && Array.isArray(b.locations)) b.locations = b.locations.filter((loc) => keep.has(locationExperiment(loc)));
  return { body: Buffer.from(JSON.stringify(b)) };
}
