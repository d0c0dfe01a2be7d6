import { describe, expect, it } from 'vitest';
import {
  GRAPHQL_LIMITS,
  filterModelVersions,
  planGraphql,
  resolveGraphqlChecks,
  type GraphqlFieldDecision,
} from '../../src/authz/graphql-policy.js';
import type { MlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { createResourceResolver } from '../../src/authz/resolve.js';
import { FlowgateError } from '../../src/errors.js';

const notFound = (what: string) => Promise.reject(new FlowgateError('RESOURCE_DOES_NOT_EXIST', `${what} does not exist`));

/** A fake MLflow: runs r1, r2 in experiment 1, r9 in experiment 9. */
const RUNS: Record<string, string> = { r1: '1', r2: '1', r9: '9' };
const lookups: MlflowLookups = {
  experimentOfRun: (id) => (Object.hasOwn(RUNS, id) ? Promise.resolve(RUNS[id]!) : notFound(`run ${id}`)),
  experimentOfLoggedModel: (id) => notFound(id),
  experimentOfTrace: (id) => notFound(id),
  experimentIdByName: (name) => notFound(name),
  isPrompt: () => Promise.resolve(false),
  experimentsOfDataset: (id) => notFound(id),
  experimentOfOwned: (_kind, id) => notFound(id),
};
const resolve = createResourceResolver(lookups);

interface Body {
  query: unknown;
  variables?: unknown;
  operationName?: unknown;
}

/** What each field needs, as `need field -> refs`, for compact expectations. */
async function needs(body: Body | string): Promise<string[]> {
  const plan = typeof body === 'string' ? planGraphql('GET', new URLSearchParams(body), undefined) : planGraphql('POST', new URLSearchParams(), body);
  const decided: GraphqlFieldDecision[] = await resolveGraphqlChecks(plan, resolve);
  return decided.map((d) => `${d.need} ${d.field}${d.refs.length ? ' -> ' + d.refs.map((r) => `${r.kind}:${r.id}`).join(',') : ''}`);
}

async function failure(body: Body | string): Promise<string> {
  try {
    await needs(body);
  } catch (err) {
    if (err instanceof FlowgateError) return `${err.status} ${err.message}`;
    throw err;
  }
  return 'no error';
}

const FRAGMENT = `
  query Q($r: String!) { ...Root }
  fragment Root on Query { mlflowGetRun(input: {runId: $r}) { run { ...RunInfo } } }
  fragment RunInfo on MlflowRunExtension { info { runId } }`;

describe('GraphQL policy: what each document needs', () => {
  it.each<[string, Body | string, string[]]>([
    ['inline experiment id', { query: '{ mlflowGetExperiment(input: {experimentId: "1"}) { experiment { name } } }' }, ['read mlflowGetExperiment -> experiment:1']],
    ['input as a variable (the UI form)', {
      query: 'query GetRun($data: MlflowGetRunInput!) @component(name: "x") { mlflowGetRun(input: $data) { run { info { runId } } } }',
      variables: { data: { runId: 'r9' } },
    }, ['read mlflowGetRun -> experiment:9']],
    ['id inside the input as a variable', { query: 'query($id: String) { mlflowGetRun(input: {runUuid: $id}) { run { info { runId } } } }', variables: { id: 'r1' } }, ['read mlflowGetRun -> experiment:1']],
    ['variable default used when not given', { query: 'query($id: String = "r9") { mlflowListArtifacts(input: {runId: $id}) { files { path } } }' }, ['read mlflowListArtifacts -> experiment:9']],
    ['given variable beats its default', { query: 'query($id: String = "r9") { mlflowListArtifacts(input: {runId: $id}) { files { path } } }', variables: { id: 'r1' } }, ['read mlflowListArtifacts -> experiment:1']],
    ['bulk metric history: every run', { query: '{ mlflowGetMetricHistoryBulkInterval(input: {runIds: ["r1", "r9"], metricKey: "m"}) { metrics { value } } }' }, ['read mlflowGetMetricHistoryBulkInterval -> experiment:1,experiment:9']],
    ['a single id where a list is expected (GraphQL list coercion)', { query: '{ mlflowGetMetricHistoryBulkInterval(input: {runIds: "r9", metricKey: "m"}) { metrics { value } } }' }, ['read mlflowGetMetricHistoryBulkInterval -> experiment:9']],
    ['aliases: each field on its own', {
      query: '{ a: mlflowGetExperiment(input: {experimentId: "1"}) { experiment { name } } b: mlflowGetExperiment(input: {experimentId: "9"}) { experiment { name } } }',
    }, ['read mlflowGetExperiment -> experiment:1', 'read mlflowGetExperiment -> experiment:9']],
    ['fragments are expanded', { query: FRAGMENT, variables: { r: 'r9' } }, ['read mlflowGetRun -> experiment:9']],
    ['inline fragment at the root', { query: '{ ... on Query { mlflowGetExperiment(input: {experimentId: "9"}) { experiment { name } } } }' }, ['read mlflowGetExperiment -> experiment:9']],
    ['@skip does not hide a field from the check', { query: '{ mlflowGetExperiment(input: {experimentId: "9"}) @skip(if: true) { experiment { name } } }' }, ['read mlflowGetExperiment -> experiment:9']],
    ['search runs: every listed experiment', { query: '{ mlflowSearchRuns(input: {experimentIds: ["1", "9"]}) { runs { info { runId } } } }' }, ['read mlflowSearchRuns -> experiment:1,experiment:9']],
    ['search runs as MLflow’s mutation', { query: 'mutation { mlflowSearchRuns(input: {experimentIds: ["9"]}) { runs { info { runId } } } }' }, ['read mlflowSearchRuns -> experiment:9']],
    ['search datasets (a mutation in MLflow’s schema)', { query: 'mutation { mlflowSearchDatasets(input: {experimentIds: ["1"]}) { datasetSummaries { name } } }' }, ['read mlflowSearchDatasets -> experiment:1']],
    ['search model versions: authenticated, answer filtered', { query: '{ mlflowSearchModelVersions(input: {filter: "name=\'m\'"}) { modelVersions { name } } }' }, ['authenticated mlflowSearchModelVersions']],
    ['introspection', { query: '{ __typename __schema { queryType { name } } __type(name: "MlflowRun") { name } }' }, ['authenticated __typename', 'authenticated __schema', 'authenticated __type']],
    ['unknown top-level field: admin only', { query: '{ mlflowDeleteEverything { ok } }' }, ['admin mlflowDeleteEverything']],
    ['echo field: admin only', { query: '{ test(inputString: "x") { output } }' }, ['admin test']],
    ['mutation field that is not a read: admin only', { query: 'mutation { testMutation(inputString: "x") { output } }' }, ['admin testMutation']],
    ['query field used as mutation: admin only', { query: 'mutation { mlflowGetExperiment(input: {experimentId: "1"}) { experiment { name } } }' }, ['admin mlflowGetExperiment']],
    ['subscription: admin only', { query: 'subscription { mlflowGetRun(input: {runId: "r1"}) { run { info { runId } } } }' }, ['admin mlflowGetRun']],
    ['two fields, one of them on another experiment', {
      query: '{ mlflowGetRun(input: {runId: "r1"}) { run { info { runId } } } mlflowGetExperiment(input: {experimentId: "9"}) { experiment { name } } }',
    }, ['read mlflowGetRun -> experiment:1', 'read mlflowGetExperiment -> experiment:9']],
    ['operationName picks one of several operations', {
      query: 'query A { mlflowGetExperiment(input: {experimentId: "1"}) { experiment { name } } } query B { mlflowGetExperiment(input: {experimentId: "9"}) { experiment { name } } }',
      operationName: 'B',
    }, ['read mlflowGetExperiment -> experiment:9']],
    ['GET query string form', `query=${encodeURIComponent('query($id: String) { mlflowGetExperiment(input: {experimentId: $id}) { experiment { name } } }')}&variables=${encodeURIComponent('{"id":"9"}')}`, ['read mlflowGetExperiment -> experiment:9']],
  ])('%s', async (_name, body, expected) => {
    expect(await needs(body)).toEqual(expected);
  });
});

const deep = (n: number) => `{ mlflowGetRun(input: {runId: "r1"}) ${'{ run '.repeat(n)}{ info { runId } }${' }'.repeat(n)} }`;
const aliases = (n: number) => `{ mlflowGetRun(input: {runId: "r1"}) { run { info { ${Array.from({ length: n }, (_, i) => `a${i}: runId`).join(' ')} } } } }`;

describe('GraphQL policy: refused documents', () => {
  it.each<[string, Body | string, string]>([
    ['malformed document', { query: '{ mlflowGetRun(input: {runId: "r1"} { run }' }, '400 Malformed GraphQL document'],
    ['no query', { query: undefined }, "400 GraphQL request needs a 'query' string"],
    ['query not a string', { query: ['{ __typename }'] }, "400 GraphQL request needs a 'query' string"],
    ['variables not an object', { query: '{ __typename }', variables: '{"a":1}' }, "400 GraphQL 'variables' must be an object"],
    ['operationName not a string', { query: '{ __typename }', operationName: 3 }, "400 GraphQL 'operationName' must be a string"],
    ['several operations, no operationName', { query: 'query A { __typename } query B { __typename }' }, '400 GraphQL document has several operations and no operationName'],
    ['operationName naming nothing', { query: 'query A { __typename }', operationName: 'B' }, "400 GraphQL document has no operation named 'B'"],
    ['two operations with one name', { query: 'query A { __typename } query A { __typename }', operationName: 'A' }, '400 GraphQL document names two operations alike'],
    ['oversize document', { query: `{ __typename ${' '.repeat(GRAPHQL_LIMITS.maxDocumentChars)} }` }, '400 GraphQL document is longer than'],
    ['too deep', { query: deep(GRAPHQL_LIMITS.maxDepth) }, '400 GraphQL document is nested deeper than'],
    ['too many aliases', { query: aliases(GRAPHQL_LIMITS.maxAliases + 1) }, '400 GraphQL document has more than 30 aliases'],
    ['too many top-level fields', { query: `{ ${Array.from({ length: 11 }, (_, i) => `t${i}: __typename`).join(' ')} }` }, '400 GraphQL document has more than 10 top-level fields'],
    ['fragment cycle', { query: '{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }' }, "400 GraphQL fragment 'A' spreads itself"],
    ['unknown fragment', { query: '{ ...Nope }' }, "400 GraphQL document spreads unknown fragment 'Nope'"],
    ['fragment fan-out bomb', {
      query: `{ ...F0 } ${Array.from({ length: 12 }, (_, i) => `fragment F${i} on Query { ${i === 11 ? '__typename' : `...F${i + 1} ...F${i + 1}`} }`).join(' ')}`,
    }, '400 GraphQL document has more than 1000 selections'],
    ['missing run id', { query: '{ mlflowGetRun(input: {}) { run { info { runId } } } }' }, "400 Missing value for required parameter 'run_id'"],
    ['no input at all', { query: '{ mlflowGetExperiment { experiment { name } } }' }, "400 Missing value for required parameter 'experiment_id'"],
    ['undeclared variable', { query: '{ mlflowGetExperiment(input: {experimentId: $x}) { experiment { name } } }', variables: { x: '1' } }, "400 Missing value for required parameter 'experiment_id'"],
    ['runId and runUuid disagree', { query: '{ mlflowGetRun(input: {runId: "r1", runUuid: "r9"}) { run { info { runId } } } }' }, "400 Conflicting values for parameter 'run_id' / 'run_uuid'"],
    ['non-canonical experiment id', { query: '{ mlflowGetExperiment(input: {experimentId: "01"}) { experiment { name } } }' }, '400 Parameter \'experiment_id\' must be an experiment id in plain decimal'],
    ['id not a string', { query: '{ mlflowGetExperiment(input: {experimentId: 1}) { experiment { name } } }' }, "400 Parameter 'experiment_id' must be a string"],
    ['unknown run', { query: '{ mlflowGetRun(input: {runId: "nope"}) { run { info { runId } } } }' }, '404 run nope does not exist'],
    ['body and query string both carry a document', 'unused', ''],
  ])('%s', async (name, body, expected) => {
    if (name.startsWith('body and query string')) {
      expect(() => planGraphql('GET', new URLSearchParams('query=%7B__typename%7D'), { query: '{ __typename }' })).toThrow(/both the body and the query string/);
      return;
    }
    expect(await failure(body)).toContain(expected);
  });

  it('a POST without a body is refused', () => {
    expect(() => planGraphql('POST', new URLSearchParams(), undefined)).toThrow(/needs a JSON body/);
  });

  it('the deepest allowed document passes', async () => {
    expect(await needs({ query: deep(GRAPHQL_LIMITS.maxDepth - 3) })).toEqual(['read mlflowGetRun -> experiment:1']);
  });
});

describe('GraphQL policy: model versions in the answer', () => {
  it('finds the lists through aliases and fragments, with the key holding the model name', () => {
    const plan = planGraphql('POST', new URLSearchParams(), {
      query: `{ r: mlflowGetRun(input: {runId: "r1"}) { run { ...MV } }
                s: mlflowSearchRuns(input: {experimentIds: ["1"]}) { runs { versions: modelVersions { n: name version } } }
                mlflowSearchModelVersions(input: {}) { modelVersions { version } } }
              fragment MV on MlflowRunExtension { modelVersions { name } }`,
    });
    expect(plan.modelVersionLists).toEqual([
      { path: ['r', 'run', 'modelVersions'], nameKeys: ['name'] },
      { path: ['s', 'runs', 'versions'], nameKeys: ['n'] },
      { path: ['mlflowSearchModelVersions', 'modelVersions'], nameKeys: [] },
    ]);
  });

  it('drops versions of unreadable models, and versions whose name was not selected', async () => {
    const answer = {
      data: {
        r: { run: { modelVersions: [{ name: 'open', version: '1' }, { name: 'secret', version: '2' }] } },
        s: { runs: [{ versions: [{ n: 'secret' }, { n: 'open' }] }, { versions: null }] },
        mlflowSearchModelVersions: { modelVersions: [{ version: '1' }] },
      },
      errors: null,
    };
    await filterModelVersions(
      answer,
      [
        { path: ['r', 'run', 'modelVersions'], nameKeys: ['name'] },
        { path: ['s', 'runs', 'versions'], nameKeys: ['n'] },
        { path: ['mlflowSearchModelVersions', 'modelVersions'], nameKeys: [] },
      ],
      (name) => Promise.resolve(name === 'open'),
    );
    expect(answer.data).toEqual({
      r: { run: { modelVersions: [{ name: 'open', version: '1' }] } },
      s: { runs: [{ versions: [{ n: 'open' }] }, { versions: null }] },
      mlflowSearchModelVersions: { modelVersions: [] },
    });
  });

  it("refuses paging a model-version search, whose page and token count versions the caller cannot see", async () => {
    for (const input of ['{maxResults: 1}', '{pageToken: "eyJvZmZzZXQiOiAxfQ=="}', '$i']) {
      const body = { query: `query Q($i: MlflowSearchModelVersionsInput) { mlflowSearchModelVersions(input: ${input}) { modelVersions { name } } }`, variables: { i: { filter: "name='m'", maxResults: '5' } } };
      expect(await failure(body)).toMatch(/^400 GraphQL field 'mlflowSearchModelVersions' does not take '(maxResults|pageToken)'.*model-versions\/search/);
    }
    expect(await failure({ query: '{ mlflowSearchModelVersions(input: {filter: "name=\'m\'", maxResults: null}) { modelVersions { name } } }' })).toBe('no error');
  });

  it("finds MLflow's page token of a model-version search, through aliases and fragments, to remove it", async () => {
    const plan = planGraphql('POST', new URLSearchParams(), {
      query: `{ a: mlflowSearchModelVersions(input: {}) { t: nextPageToken ...P modelVersions { name } }
                mlflowSearchModelVersions(input: {}) { nextPageToken } }
              fragment P on MlflowSearchModelVersionsResponse { nextPageToken }`,
    });
    expect(plan.modelVersionLists).toEqual([
      { path: ['a', 'modelVersions'], nameKeys: ['name'] },
      { path: ['a', 't'], nameKeys: [], pageToken: true },
      { path: ['a', 'nextPageToken'], nameKeys: [], pageToken: true },
      { path: ['mlflowSearchModelVersions', 'nextPageToken'], nameKeys: [], pageToken: true },
    ]);
    const answer = {
      data: {
        a: { t: 'eyJvZmZzZXQiOiAxfQ==', nextPageToken: 'eyJvZmZzZXQiOiAxfQ==', modelVersions: [{ name: 'open' }, { name: 'secret' }] },
        mlflowSearchModelVersions: { nextPageToken: 'eyJvZmZzZXQiOiAxfQ==' },
      },
    };
    await filterModelVersions(answer, plan.modelVersionLists, (name) => Promise.resolve(name === 'open'));
    expect(answer.data).toEqual({
      a: { t: null, nextPageToken: null, modelVersions: [{ name: 'open' }] },
      mlflowSearchModelVersions: { nextPageToken: null },
    });
  });

  it('a list selected twice under one response key (one selection without name) keeps the readable versions', async () => {
    // GraphQL merges both selections into one list of {name, version}: the name is in the answer.
    const plan = planGraphql('POST', new URLSearchParams(), {
      query: `query Q($r: String) {
        mlflowGetRun(input: {runId: $r}) { run { modelVersions { name } ...V } }
        again: mlflowGetRun(input: {runId: $r}) { run { ...V modelVersions { n: name } ...W } }
      }
      fragment V on MlflowRunExtension { modelVersions { version } }
      fragment W on MlflowRunExtension { modelVersions { name } }`,
      variables: { r: 'abc' },
    });
    expect(plan.modelVersionLists).toEqual([
      { path: ['mlflowGetRun', 'run', 'modelVersions'], nameKeys: ['name'] },
      { path: ['again', 'run', 'modelVersions'], nameKeys: ['n', 'name'] },
    ]);
    const answer = {
      data: {
        mlflowGetRun: { run: { modelVersions: [{ name: 'open', version: '1' }, { name: 'secret', version: '1' }] } },
        again: { run: { modelVersions: [{ version: '1', n: 'secret', name: 'secret' }, { version: '2', n: 'open', name: 'open' }] } },
      },
    };
    await filterModelVersions(answer, plan.modelVersionLists, (name) => Promise.resolve(name === 'open'));
    expect(answer.data).toEqual({
      mlflowGetRun: { run: { modelVersions: [{ name: 'open', version: '1' }] } },
      again: { run: { modelVersions: [{ version: '2', n: 'open', name: 'open' }] } },
    });
  });

  it('lists handed over separately on one path are filtered as one, by the union of their name keys', async () => {
    const answer = { data: { x: { modelVersions: [{ name: 'open', version: '1' }, { name: 'secret', version: '2' }] } } };
    await filterModelVersions(
      answer,
      [
        { path: ['x', 'modelVersions'], nameKeys: [] },
        { path: ['x', 'modelVersions'], nameKeys: ['name'] },
      ],
      (name) => Promise.resolve(name === 'open'),
    );
    expect(answer.data.x.modelVersions).toEqual([{ name: 'open', version: '1' }]);
  });

  it('a list selected twice with no name key in any selection still drops every version (fail closed)', async () => {
    const plan = planGraphql('POST', new URLSearchParams(), {
      query: `{ mlflowGetRun(input: {runId: "abc"}) { run { modelVersions { version } ...V } } }
      fragment V on MlflowRunExtension { modelVersions { version status } }`,
    });
    expect(plan.modelVersionLists).toEqual([{ path: ['mlflowGetRun', 'run', 'modelVersions'], nameKeys: [] }]);
    const answer = { data: { mlflowGetRun: { run: { modelVersions: [{ version: '1', status: 'READY', name: 'open' }] } } } };
    await filterModelVersions(answer, plan.modelVersionLists, () => Promise.resolve(true));
    expect(answer.data.mlflowGetRun.run.modelVersions).toEqual([]);
  });

  it('a failing look-up drops the version (fail closed)', async () => {
    const answer = { data: { x: { modelVersions: [{ name: 'm' }] } } };
    await filterModelVersions(answer, [{ path: ['x', 'modelVersions'], nameKeys: ['name'] }], () => Promise.reject(new Error('down')));
    expect(answer.data.x.modelVersions).toEqual([]);
  });
});
