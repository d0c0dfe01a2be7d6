import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { readField, spellings, type ResolveRequest } from '../../src/authz/resolve.js';
import type { IdSource, RouteEntry } from '../../src/authz/types.js';
import { readMlflowJson } from '../../src/proxy/mlflow-json.js';

/*
 * For every catalog row whose id can travel in a body, a foreign id moved into any other place
 * MLflow reads (the body under either spelling, the query, a double-encoded body) is refused or
 * agrees: flowgate never decides on one id while MLflow acts on another.
 */

type Located = Exclude<IdSource, { kind: 'none' | 'otlp_trace_ids' }>;
/** An MCP server is named by two path segments, which MLflow reads and nothing else (test/security/mcp-servers.test.ts holds a body's name against them). */
/*
 * A Skill likewise: its path alone (a registration's metadata must repeat it or MLflow refuses), or a
 * bulk registration's `skills[].name` under the body's `organization`, MLflow's request model read
 * strictly (no other spelling, no query): test/security/skills.test.ts holds both.
 */
const PATH_ONLY = new Set<IdSource['kind']>(['mcp_server', 'skill', 'skills_registered']);
/**
 * An optimizer config's reflection endpoint and a judge's endpoints and recalled traces are inside JSON texts, not fields of their
 * own: their copies under both spellings must agree like any field's (test/security/jobs.test.ts sends them apart).
 */
const EMBEDDED = new Set<IdSource['kind']>(['reflection_endpoint', 'judge_endpoints', 'judge_traces', 'registered_scorers']);
const idsOf = (row: RouteEntry): Located[] =>
  [row.id, ...(row.also ?? []).filter((a) => !a.clientChosen).map((a) => a.id)].filter(
    (id): id is Located =>
      id.kind !== 'none' &&
      id.kind !== 'otlp_trace_ids' &&
      id.kind !== 'artifact_path' &&
      !PATH_ONLY.has(id.kind) &&
      !EMBEDDED.has(id.kind) &&
      id.from !== 'header' &&
      !('entry' in id && id.entry !== undefined),
  );

const SINGLE = new Set(['experiment_id', 'experiment_name', 'run_id', 'logged_model_id', 'trace_id', 'model_name', 'dataset_id', 'owned_id']);

/** The body holding `value` at the id's (dotted) field, one spelling chosen per level. */
function bodyWith(id: Located, value: string, camel: boolean[]): Record<string, unknown> {
  const path = id.field.split('.');
  const leaf: unknown = SINGLE.has(id.kind) ? value : [value];
  let node: unknown = leaf;
  for (let i = path.length - 1; i >= 0; i--) {
    const names = spellings(path[i]!);
    node = { [camel[i] ? names[names.length - 1]! : names[0]!]: node };
  }
  return node as Record<string, unknown>;
}

const request = (method: string, params: Record<string, string>, query: string, body: unknown): ResolveRequest => ({
  method,
  params,
  query: new URLSearchParams(query),
  body,
  headers: {},
});

const rows = ROUTE_CATALOG.filter((row) => row.method !== 'GET' && idsOf(row).length > 0);
const idText = fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/);
const twoIds = fc.tuple(idText, idText).filter(([a, b]) => a !== b);
const camels = fc.array(fc.boolean(), { minLength: 6, maxLength: 6 });

/** Every copy of the id a request holds, found independently of the resolver (the oracle). */
function copies(id: Located, r: ResolveRequest): string[] {
  const found: string[] = [];
  if (id.from === 'param' && r.params[id.field] !== undefined) found.push(r.params[id.field]!);
  for (const name of spellings(id.field)) found.push(...r.query.getAll(name));
  const walk = (node: unknown, path: string[]) => {
    if (Array.isArray(node)) return node.forEach((item) => walk(item, path));
    if (path.length === 0) return typeof node === 'string' && found.push(node);
    if (typeof node !== 'object' || node === null) return;
    for (const [key, value] of Object.entries(node)) if (spellings(path[0]!).includes(key)) walk(value, path.slice(1));
  };
  if (id.from !== 'query') walk(r.body, id.field.split('.'));
  return [...new Set(found)];
}

function outcome(id: Located, r: ResolveRequest): string[] | 'refused' {
  try {
    return readField(id, r);
  } catch (e) {
    expect(e).toMatchObject({ status: 400 });
    return 'refused';
  }
}

describe('ids in every place MLflow reads them', () => {
  it('covers the rows whose ids may come in a body', () => {
    expect(rows.length).toBeGreaterThan(60);
    expect(rows.some((r) => r.pattern === '/api/2.0/mlflow/logged-models/:model_id' && r.method === 'PATCH')).toBe(true);
  });

  it.each(rows.map((row) => [`${row.method} ${row.pattern}`, row] as const))('%s: a foreign id elsewhere is refused or checked', (_, row) => {
    fc.assert(
      fc.property(twoIds, camels, fc.boolean(), ([mine, foreign], camel, doubleEncoded) => {
        for (const id of idsOf(row)) {
          const single = SINGLE.has(id.kind);
          // Refused, or (a list) the foreign id is among those decided on.
          const safe = (r: ResolveRequest) => {
            const got = outcome(id, r);
            if (got === 'refused') return;
            const present = copies(id, r);
            if (single) expect(got, `copies ${JSON.stringify(present)}`).toEqual(present);
            else expect(got).toEqual(expect.arrayContaining(present));
          };
          const params = id.from === 'param' ? { [id.field]: mine } : {};
          const query = id.from === 'query' ? `${id.field}=${mine}` : '';
          const ownBody = id.from === 'body' || id.from === 'auto' ? bodyWith(id, mine, camel) : {};
          // MLflow parses a JSON body for these rows (an upload's query-only id has a file body instead).
          if (id.from !== 'query') {
            const foreignBody = { ...ownBody, ...bodyWith(id, foreign, camel.map((c) => !c)) };
            const json = JSON.stringify(foreignBody);
            const parsed = readMlflowJson(Buffer.from(doubleEncoded ? JSON.stringify(json) : json));
            safe(request(row.method, params, query, parsed));
          }
          // MLflow reads the query of these (GET-style and DELETE handlers; path ids are read with it).
          if (id.from !== 'body') {
            const extra = `${id.field}=${foreign}`;
            safe(request(row.method, params, query ? `${query}&${extra}` : extra, ownBody));
          }
          // The same id everywhere agrees and is what the decision reads.
          const everywhere = id.from === 'query' ? {} : { ...ownBody, ...bodyWith(id, mine, camel) };
          expect(outcome(id, request(row.method, params, query, everywhere))).toEqual([mine]);
        }
      }),
      { numRuns: 25 },
    );
  });
});

/*
 * MLflow's protobuf handlers read a GET's fields from its query string (from its body only when the query
 * is empty), under each field's own name, and every other method's from the JSON body alone. An id only
 * elsewhere would be decided on here while MLflow acts with none (a list or search then covering
 * everything): refused. Rows reading the query explicitly are Flask handlers reading `request.args`.
 */
describe('an id only in a place MLflow does not read for this method is refused', () => {
  const placed = ROUTE_CATALOG.flatMap((row) => idsOf(row).filter((id) => id.from === 'auto' || id.from === 'query').map((id) => [`${row.method} ${row.pattern} ${id.field}`, row, id] as const));

  it('covers GET and body rows', () => {
    expect(placed.some(([, row]) => row.method === 'GET')).toBe(true);
    expect(placed.some(([, row]) => row.method === 'POST')).toBe(true);
    expect(placed.some(([, row]) => row.pattern === '/api/3.0/mlflow/issues/search')).toBe(true);
  });

  it.each(placed)('%s', (_, row, id) => {
    fc.assert(
      fc.property(idText, fc.boolean(), (mine, doubleEncoded) => {
        const body = (b: unknown) => readMlflowJson(Buffer.from(doubleEncoded ? JSON.stringify(JSON.stringify(b)) : JSON.stringify(b)));
        const camel = spellings(id.field).find((n) => n !== id.field);
        // A lowerCamelCase spelling in a query string is never read by MLflow.
        if (camel !== undefined) expect(outcome(id, request(row.method, {}, `${camel}=${mine}`, undefined))).toBe('refused');
        if (id.from === 'query') return;
        if (row.method === 'GET') {
          // Any query parameter makes MLflow read the query alone: a body copy is not read.
          expect(outcome(id, request(row.method, {}, 'max_results=1', body(bodyWith(id, mine, [false, false, false, false, false, false]))))).toBe('refused');
        } else {
          // A JSON-body method's query string is not read: a query copy with no body copy is refused.
          expect(outcome(id, request(row.method, {}, `${id.field}=${mine}`, body({})))).toBe('refused');
          expect(outcome(id, request(row.method, {}, `${id.field}=${mine}`, undefined))).toBe('refused');
        }
      }),
      { numRuns: 5 },
    );
  });
});
