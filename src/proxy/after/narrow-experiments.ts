import { badRequest } from '../../errors.js';
import { jsonCopy } from '../json-copy.js';

/** Where a search names its experiments, per route: runs and traces searches are narrowed before MLflow sees them. */
export type ExperimentList =
  | { readonly in: 'body'; readonly shape: 'experiment_ids' | 'trace_locations' }
  | { readonly in: 'query'; readonly field: string };

const obj = (v: unknown): Record<string, unknown> => (typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : {});

export function listedExperiments(where: ExperimentList, body: unknown, query: URLSearchParams): string[] {
  if (where.in === 'query') return query.getAll(where.field);
  const b = obj(body);
  const ids: string[] = [];
  if (b.experiment_ids !== undefined) {
    if (!Array.isArray(b.experiment_ids)) throw badRequest("'experiment_ids' must be a list");
    for (const id of b.experiment_ids) ids.push(String(id));
  }
  if (where.shape === 'trace_locations' && b.locations !== undefined) {
    if (!Array.isArray(b.locations)) throw badRequest("'locations' must be a list");
    for (const loc of b.locations) {
      const id = obj(obj(loc).mlflow_experiment).experiment_id;
      if (id === undefined) throw badRequest('Only MLflow experiment trace locations are supported');
      ids.push(String(id));
    }
  }
  return ids;
}

/** The same request naming only `keep`. */
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
  if (Array.isArray(b.experiment_ids)) b.experiment_ids = b.experiment_ids.filter((id) => keep.has(String(id)));
  if (Array.isArray(b.locations))
    b.locations = b.locations.filter((loc) => keep.has(String(obj(obj(loc).mlflow_experiment).experiment_id)));
  return { body: Buffer.from(JSON.stringify(b)) };
}
