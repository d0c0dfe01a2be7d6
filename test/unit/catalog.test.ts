import { describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import {
  compareVersions,
  NEWEST_RELEASE,
  OLDEST_RELEASE,
  RECORDED_RELEASES,
  ROW_SELECTORS,
  routesOf,
  rowExistsIn,
  selectorNames,
} from '../../src/authz/catalog-versions.js';
import { rowsBroaderThanRoutes, rowsHitBy, unclassifiedRoutes } from '../../src/authz/mlflow-rules.js';
import { createRouteMatcher, isApiPath } from '../../src/authz/route-matcher.js';
import type { RouteEntry } from '../../src/authz/types.js';

const matcher = createRouteMatcher(ROUTE_CATALOG);

type Expected = Pick<RouteEntry, 'need' | 'resource'> & { idKind?: RouteEntry['id']['kind']; after?: RouteEntry['after'] };

const cases: Array<[string, string, Expected]> = [
  ['GET', '/api/2.0/mlflow/experiments/get', { need: 'read', resource: 'experiment', idKind: 'experiment_id' }],
  ['GET', '/api/2.0/mlflow/experiments/get-by-name', { need: 'read', resource: 'experiment', idKind: 'experiment_name', after: 'verify_answered_experiment' }],
  ['POST', '/api/2.0/mlflow/experiments/create', { need: 'create', resource: 'experiment', after: 'grant_creator_experiment' }],
  ['POST', '/api/2.0/mlflow/experiments/search', { need: 'authenticated', resource: 'none', after: 'filter_search_experiments' }],
  ['POST', '/api/2.0/mlflow/experiments/delete', { need: 'manage', resource: 'experiment', after: 'forget_experiment_names' }],
  ['POST', '/api/2.0/mlflow/experiments/restore', { need: 'manage', resource: 'experiment', after: 'forget_experiment_names' }],
  ['POST', '/api/2.0/mlflow/experiments/update', { need: 'edit', resource: 'experiment', after: 'forget_experiment_names' }],
  ['POST', '/api/2.0/mlflow/runs/create', { need: 'edit', resource: 'experiment', idKind: 'experiment_id' }],
  ['GET', '/api/2.0/mlflow/runs/get', { need: 'read', resource: 'experiment', idKind: 'run_id' }],
  ['POST', '/api/2.0/mlflow/runs/log-batch', { need: 'edit', resource: 'experiment', idKind: 'run_id' }],
  ['POST', '/api/2.0/mlflow/runs/delete', { need: 'manage', resource: 'experiment', idKind: 'run_id' }],
  ['POST', '/api/2.0/mlflow/runs/search', { need: 'authenticated', resource: 'none', after: 'filter_search_runs' }],
  ['GET', '/api/2.0/mlflow/metrics/get-history-bulk-interval', { need: 'read', resource: 'experiment', idKind: 'run_ids' }],
  ['GET', '/ajax-api/2.0/mlflow/metrics/get-history-bulk', { need: 'read', resource: 'experiment', idKind: 'run_ids' }],
  ['POST', '/api/2.0/mlflow/registered-models/create', { need: 'create', resource: 'model_or_prompt', after: 'grant_creator_registered_model' }],
  ['POST', '/api/2.0/mlflow/registered-models/rename', { need: 'edit', resource: 'model_or_prompt', after: 'move_registered_model_grants' }],
  ['DELETE', '/api/2.0/mlflow/registered-models/delete', { need: 'manage', resource: 'model_or_prompt', after: 'drop_registered_model_grants' }],
  ['GET', '/api/2.0/mlflow/registered-models/search', { need: 'authenticated', resource: 'none', after: 'filter_search_registered_models' }],
  ['GET', '/api/2.0/mlflow/model-versions/search', { need: 'authenticated', resource: 'none', after: 'filter_search_model_versions' }],
  ['POST', '/api/2.0/mlflow/model-versions/create', { need: 'edit', resource: 'model_or_prompt', idKind: 'model_name' }],
  ['DELETE', '/api/2.0/mlflow/registered-models/alias', { need: 'manage', resource: 'model_or_prompt' }],
  ['GET', '/api/2.0/mlflow/registered-models/alias', { need: 'read', resource: 'model_or_prompt' }],
  ['POST', '/api/2.0/mlflow/logged-models/search', { need: 'authenticated', resource: 'none', after: 'filter_search_logged_models' }],
  ['DELETE', '/api/2.0/mlflow/logged-models/m-123', { need: 'manage', resource: 'experiment', idKind: 'logged_model_id' }],
  ['GET', '/api/2.0/mlflow/traces', { need: 'authenticated', resource: 'none', after: 'filter_search_traces' }],
  ['POST', '/api/3.0/mlflow/traces/search', { need: 'authenticated', resource: 'none', after: 'filter_search_traces' }],
  ['GET', '/api/3.0/mlflow/traces/tr-abc', { need: 'read', resource: 'experiment', idKind: 'trace_id' }],
  ['GET', '/api/3.0/mlflow/traces/get', { need: 'read', resource: 'experiment', idKind: 'trace_id' }],
  ['GET', '/api/3.0/mlflow/traces/batchGet', { need: 'read', resource: 'experiment', idKind: 'trace_ids' }],
  ['POST', '/api/3.0/mlflow/traces', { need: 'edit', resource: 'experiment', idKind: 'experiment_id', after: 'forget_written_traces' }],
  ['POST', '/v1/traces', { need: 'edit', resource: 'experiment', idKind: 'experiment_id', after: 'forget_written_traces' }],
  ['GET', '/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/model.pkl', { need: 'read', resource: 'experiment', idKind: 'artifact_path' }],
  ['PUT', '/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/model.pkl', { need: 'edit', resource: 'experiment', idKind: 'artifact_path' }],
  ['DELETE', '/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/model.pkl', { need: 'manage', resource: 'experiment' }],
  ['GET', '/api/2.0/mlflow-artifacts/artifacts', { need: 'read', resource: 'experiment', idKind: 'artifact_path' }],
  ['POST', '/api/2.0/mlflow-artifacts/mpu/create/1/abc/artifacts/big.bin', { need: 'edit', resource: 'experiment' }],
  ['POST', '/api/2.0/mlflow-artifacts/mpu/abort/1/abc/artifacts/big.bin', { need: 'edit', resource: 'experiment' }],
  ['GET', '/api/2.0/mlflow-artifacts/presigned/1/abc/artifacts/f', { need: 'read', resource: 'experiment' }],
  ['GET', '/get-artifact', { need: 'read', resource: 'experiment', idKind: 'run_id' }],
  ['GET', '/model-versions/get-artifact', { need: 'read', resource: 'model_or_prompt', idKind: 'model_name' }],
  ['GET', '/graphql', { need: 'authenticated', resource: 'none', after: 'graphql' }],
  ['POST', '/graphql', { need: 'authenticated', resource: 'none', after: 'graphql' }],
  ['POST', '/api/2.0/mlflow/webhooks', { need: 'admin', resource: 'none' }],
  ['POST', '/api/3.0/mlflow/workspaces', { need: 'admin', resource: 'none' }],
  ['POST', '/api/3.0/mlflow/gateway/secrets/create', { need: 'create', resource: 'gateway_secret', after: 'grant_creator_gateway' }],
  ['GET', '/api/3.0/mlflow/gateway/secrets/get', { need: 'read', resource: 'gateway_secret', idKind: 'gateway_id', after: 'redact_gateway_answer' }],
  ['POST', '/api/3.0/mlflow/gateway/secrets/update', { need: 'edit', resource: 'gateway_secret', idKind: 'gateway_id' }],
  ['DELETE', '/api/3.0/mlflow/gateway/secrets/delete', { need: 'manage', resource: 'gateway_secret', idKind: 'gateway_id', after: 'follow_gateway' }],
  ['GET', '/api/3.0/mlflow/gateway/secrets/list', { need: 'authenticated', resource: 'none', after: 'filter_gateway_list' }],
  ['POST', '/ajax-api/3.0/mlflow/gateway/model-definitions/create', { need: 'create', resource: 'gateway_model_definition', after: 'grant_creator_gateway' }],
  ['POST', '/api/3.0/mlflow/gateway/model-definitions/update', { need: 'edit', resource: 'gateway_model_definition', idKind: 'gateway_id', after: 'follow_gateway' }],
  ['GET', '/api/3.0/mlflow/gateway/model-definitions/list', { need: 'authenticated', resource: 'none', after: 'filter_gateway_list' }],
  ['POST', '/api/3.0/mlflow/gateway/endpoints/create', { need: 'create', resource: 'gateway_endpoint', after: 'grant_creator_gateway' }],
  ['GET', '/api/3.0/mlflow/gateway/endpoints/get', { need: 'read', resource: 'gateway_endpoint', idKind: 'gateway_id', after: 'redact_gateway_answer' }],
  ['POST', '/api/3.0/mlflow/gateway/endpoints/update', { need: 'edit', resource: 'gateway_endpoint', idKind: 'gateway_id', after: 'follow_gateway' }],
  ['DELETE', '/api/3.0/mlflow/gateway/endpoints/delete', { need: 'manage', resource: 'gateway_endpoint', idKind: 'gateway_id', after: 'follow_gateway' }],
  ['POST', '/api/3.0/mlflow/gateway/endpoints/models/attach', { need: 'edit', resource: 'gateway_endpoint', idKind: 'gateway_id', after: 'redact_gateway_answer' }],
  ['POST', '/api/3.0/mlflow/gateway/endpoints/models/detach', { need: 'edit', resource: 'gateway_endpoint', idKind: 'gateway_id' }],
  ['GET', '/api/3.0/mlflow/gateway/endpoints/bindings/list', { need: 'read', resource: 'gateway_endpoint', idKind: 'gateway_id' }],
  ['DELETE', '/api/3.0/mlflow/gateway/endpoints/delete-tag', { need: 'edit', resource: 'gateway_endpoint', idKind: 'gateway_id' }],
  ['GET', '/api/3.0/mlflow/gateway/budgets/list', { need: 'admin', resource: 'none' }],
  ['POST', '/api/3.0/mlflow/gateway/guardrails/add-to-endpoint', { need: 'admin', resource: 'none' }],
  ['POST', '/gateway/my-endpoint/mlflow/invocations', { need: 'use', resource: 'gateway_endpoint', idKind: 'gateway_name' }],
  ['POST', '/gateway/mlflow/v1/chat/completions', { need: 'use', resource: 'gateway_endpoint', idKind: 'gateway_name' }],
  ['POST', '/gateway/openai/v1/responses/compact', { need: 'use', resource: 'gateway_endpoint', idKind: 'gateway_name' }],
  ['POST', '/gateway/anthropic/v1/messages', { need: 'use', resource: 'gateway_endpoint', idKind: 'gateway_name' }],
  ['GET', '/gateway/mlflow/v1/models', { need: 'authenticated', resource: 'none', after: 'filter_gateway_list' }],
  ['POST', '/gateway/gemini/v1beta/models/ep:generateContent', { need: 'use', resource: 'gateway_endpoint', idKind: 'gateway_name' }],
  ['POST', '/gateway/proxy/ep/chat/completions', { need: 'use', resource: 'gateway_endpoint', idKind: 'gateway_name' }],
  ['POST', '/ajax-api/2.0/mlflow/gateway-proxy', { need: 'admin', resource: 'none' }],
  ['GET', '/ajax-api/3.0/mlflow/gateway/supported-providers', { need: 'authenticated', resource: 'none' }],
  ['DELETE', '/api/3.0/mlflow/mcp-servers/team/server/versions/3', { need: 'manage', resource: 'mcp_server', idKind: 'mcp_server' }],
  ['GET', '/ajax-api/3.0/mlflow/mcp-servers/com.example/tools/aliases/a/b', { need: 'read', resource: 'mcp_server', idKind: 'mcp_server' }],
  ['POST', '/api/3.0/mlflow/mcp-servers/com.example/tools/versions', { need: 'edit', resource: 'mcp_server', idKind: 'mcp_server', after: 'make_mcp_server_parent' }],
  ['GET', '/api/3.0/mlflow/mcp-servers/endpoints', { need: 'authenticated', resource: 'none', after: 'filter_search_mcp_endpoints' }],
  ['GET', '/api/3.0/mlflow/mcp-servers/endpoints/tools', { need: 'read', resource: 'mcp_server', idKind: 'mcp_server' }],
  ['POST', '/api/3.0/mlflow/mcp-servers', { need: 'create', resource: 'mcp_server', after: 'grant_creator_mcp_server' }],
  ['GET', '/api/3.0/mlflow/server-info', { need: 'public', resource: 'none' }],
  ['GET', '/health', { need: 'public', resource: 'none' }],
  ['GET', '/version', { need: 'public', resource: 'none' }],
  ['GET', '/', { need: 'public', resource: 'none' }],
  ['GET', '/static-files/static/js/main.js', { need: 'public', resource: 'none' }],
  ['POST', '/ajax-api/3.0/mlflow/ui-telemetry', { need: 'authenticated', resource: 'none' }],
  ['POST', '/ajax-api/3.0/mlflow/demo/delete', { need: 'admin', resource: 'none' }],
  ['POST', '/ajax-api/3.0/mlflow/assistant/message', { need: 'admin', resource: 'none' }],
  ['GET', '/ajax-api/3.0/jobs/job-1', { need: 'authenticated', resource: 'none' }],
  ['POST', '/ajax-api/3.0/jobs/', { need: 'admin', resource: 'none' }],
  ['GET', '/api/3.0/mlflow/datasets/d-1', { need: 'read', resource: 'experiment', idKind: 'dataset_id' }],
  ['POST', '/api/3.0/mlflow/datasets/d-1/add-experiments', { need: 'edit', resource: 'experiment', idKind: 'dataset_id', after: 'forget_dataset_experiments' }],
  ['DELETE', '/api/3.0/mlflow/datasets/d-1', { need: 'manage', resource: 'experiment', idKind: 'dataset_id', after: 'forget_dataset_experiments' }],
  ['POST', '/api/3.0/mlflow/datasets/search', { need: 'read', resource: 'experiment', idKind: 'experiment_ids', after: 'filter_found_datasets' }],
  ['POST', '/api/3.0/mlflow/scorers/register', { need: 'edit', resource: 'experiment', after: 'grant_creator_scorer' }],
  ['GET', '/api/3.0/mlflow/scorers/get', { need: 'read', resource: 'scorer', idKind: 'scorer' }],
  ['DELETE', '/ajax-api/3.0/mlflow/scorers/delete', { need: 'manage', resource: 'scorer', idKind: 'scorer', after: 'drop_scorer_grants' }],
  ['PUT', '/api/3.0/mlflow/scorers/online-config', { need: 'edit', resource: 'scorer', idKind: 'scorer' }],
];

describe('route catalog', () => {
  it.each(cases)('%s %s', (method, path, expected) => {
    const found = matcher.match(method, path);
    expect(found, `${method} ${path} should be in the catalog`).toBeDefined();
    const entry = found!.entry;
    expect(entry.need).toBe(expected.need);
    expect(entry.resource).toBe(expected.resource);
    if (expected.idKind) expect(entry.id.kind).toBe(expected.idKind);
    expect(entry.after).toBe(expected.after);
  });

  it('gives every /api/ row an identical /ajax-api/ twin', () => {
    const key = (e: RouteEntry) => `${e.method} ${e.pattern}`;
    const byKey = new Map(ROUTE_CATALOG.map((e) => [key(e), e]));
    const apiRows = ROUTE_CATALOG.filter((e) => e.pattern.startsWith('/api/'));
    expect(apiRows.length).toBeGreaterThan(150);
    for (const row of apiRows) {
      const twin = byKey.get(`${row.method} ${row.pattern.replace(/^\/api\//, '/ajax-api/')}`);
      expect(twin, `ajax twin of ${key(row)}`).toBeDefined();
      expect({ ...twin, pattern: row.pattern }).toEqual(row);
    }
  });

  it('guards the fields MLflow reads as storage locations', () => {
    const guarded = (method: string, path: string) => matcher.match(method, path)?.entry.guards?.map((g) => `${g.kind}:${g.field}`);
    expect(guarded('POST', '/api/2.0/mlflow/experiments/create')).toEqual(['admin_only:artifact_location', 'reserved_name_prefix:name']);
    expect(guarded('POST', '/ajax-api/2.0/mlflow/experiments/create')).toEqual(['admin_only:artifact_location', 'reserved_name_prefix:name']);
    // An endpoint's usage experiment (`gateway/<endpoint>`) is MLflow's to name.
    expect(guarded('POST', '/api/2.0/mlflow/experiments/update')).toEqual(['reserved_name_prefix:new_name']);
    expect(guarded('POST', '/ajax-api/2.0/mlflow/experiments/update')).toEqual(['reserved_name_prefix:new_name']);
    for (const path of ['/api/2.0/mlflow/traces/tr-1/tags', '/api/3.0/mlflow/traces/tr-1/tags', '/ajax-api/3.0/mlflow/traces/tr-1/tags'])
      for (const method of ['PATCH', 'DELETE']) expect(guarded(method, path), `${method} ${path}`).toEqual(['reserved_tag_key:key']);
    expect(guarded('POST', '/api/3.0/mlflow/traces')).toEqual(['reserved_tag_map:trace.trace_info.tags']);
    expect(guarded('POST', '/api/2.0/mlflow/traces')).toEqual(['reserved_tag_list:tags']);
    expect(guarded('PATCH', '/api/2.0/mlflow/traces/tr-1')).toEqual(['reserved_tag_list:tags']);
  });

  it('checks client-chosen trace ids wherever MLflow writes spans or trace info', () => {
    const chosen = (method: string, path: string) => matcher.match(method, path)?.entry.also?.filter((a) => a.clientChosen).map((a) => a.id.kind);
    expect(chosen('POST', '/api/3.0/mlflow/traces')).toEqual(['trace_id']);
    expect(chosen('POST', '/ajax-api/3.0/mlflow/traces')).toEqual(['trace_id']);
    expect(chosen('POST', '/v1/traces')).toEqual(['otlp_trace_ids']);
  });

  it('has no duplicate (method, pattern) rows', () => {
    const keys = ROUTE_CATALOG.map((e) => `${e.method} ${e.pattern}`);
    const duplicates = keys.filter((k, i) => keys.indexOf(k) !== i);
    expect(duplicates).toEqual([]);
  });

  it('names an after hook only where it belongs', () => {
    for (const entry of ROUTE_CATALOG) {
      if (entry.after?.startsWith('filter_search') || entry.after === 'graphql') {
        expect(entry.need, `${entry.method} ${entry.pattern}`).toBe('authenticated');
      }
      if (entry.need === 'admin' || entry.need === 'public' || entry.need === 'authenticated') {
        expect(entry.id.kind, `${entry.method} ${entry.pattern}`).toBe('none');
      }
      if (entry.resource === 'none') {
        expect(['public', 'authenticated', 'admin']).toContain(entry.need);
      }
    }
  });

  it('leaves only the UI shell, health, version and server-info public', () => {
    const publicRows = ROUTE_CATALOG.filter((e) => e.need === 'public').map((e) => `${e.method} ${e.pattern}`);
    expect(publicRows.sort()).toEqual(
      [
        'GET /',
        'GET /static-files/*',
        'GET /build/*',
        'GET /health',
        'GET /version',
        // MLflow 3.9 served server info at the root.
        'GET /server-info',
        'GET /api/3.0/mlflow/server-info',
        'GET /ajax-api/3.0/mlflow/server-info',
      ].sort(),
    );
  });

  it('is frozen', () => {
    expect(Object.isFrozen(ROUTE_CATALOG)).toBe(true);
    expect(Object.isFrozen(ROUTE_CATALOG[0])).toBe(true);
  });
});

describe('route matcher', () => {
  it('matches HEAD as GET', () => {
    const head = matcher.match('HEAD', '/api/2.0/mlflow-artifacts/artifacts/1/r/artifacts/x');
    expect(head?.entry.method).toBe('GET');
    expect(head?.entry.need).toBe('read');
  });

  it('does not match a method MLflow does not answer', () => {
    expect(matcher.match('PUT', '/api/2.0/mlflow/runs/get')).toBeUndefined();
    expect(matcher.match('TRACE', '/api/2.0/mlflow/runs/get')).toBeUndefined();
    expect(matcher.match('get', '/api/2.0/mlflow/runs/get')).toBeUndefined();
  });

  it('is case-sensitive and strict about trailing and doubled slashes', () => {
    expect(matcher.match('GET', '/API/2.0/mlflow/runs/get')).toBeUndefined();
    expect(matcher.match('GET', '/api/2.0/mlflow/Runs/get')).toBeUndefined();
    expect(matcher.match('GET', '/api/2.0/mlflow/runs/get/')).toBeUndefined();
    expect(matcher.match('GET', '/api/2.0//mlflow/runs/get')).toBeUndefined();
    expect(matcher.match('GET', 'api/2.0/mlflow/runs/get')).toBeUndefined();
  });

  it('captures an already-decoded artifact path verbatim: %, spaces, :, ?, #, non-ASCII', () => {
    const path = '1/run id/artifacts/100% done: a?b#c ü %41 %2F.txt';
    const found = matcher.match('PUT', `/api/2.0/mlflow-artifacts/artifacts/${path}`);
    expect(found?.entry.need).toBe('edit');
    expect(found?.params['*']).toBe(path);
  });

  it('captures a decoded single-segment parameter verbatim', () => {
    const found = matcher.match('GET', '/api/2.0/mlflow/logged-models/m 50%25:x');
    expect(found?.params['model_id']).toBe('m 50%25:x');
  });

  it('prefers static segments over parameters', () => {
    expect(matcher.match('GET', '/api/3.0/mlflow/traces/get')?.entry.id).toEqual({ kind: 'trace_id', field: 'trace_id', from: 'auto' });
    expect(matcher.match('GET', '/api/3.0/mlflow/traces/tr-1')?.params).toEqual({ trace_id: 'tr-1' });
  });

  it('answers a repeated call the same, remembering only parameterless routes', () => {
    const fresh = createRouteMatcher(ROUTE_CATALOG);
    for (let i = 0; i < 3; i++) {
      expect(fresh.match('POST', '/api/2.0/mlflow/runs/log-metric')?.entry.pattern).toBe('/api/2.0/mlflow/runs/log-metric');
      expect(fresh.match('HEAD', '/api/2.0/mlflow/runs/get')?.entry.method).toBe('GET');
      expect(fresh.match('PUT', '/api/2.0/mlflow/runs/get')).toBeUndefined();
      expect(fresh.match('GET', '/api/2.0/mlflow/runs/get/')).toBeUndefined();
      expect(fresh.match('GET', `/api/3.0/mlflow/traces/tr-${i}`)?.params).toEqual({ trace_id: `tr-${i}` });
    }
    // A remembered match cannot be changed by whoever receives it.
    const m = fresh.match('GET', '/api/2.0/mlflow/runs/get')!;
    expect(() => ((m.params as Record<string, string>).run_id = 'x')).toThrow(TypeError);
    expect(fresh.match('GET', '/api/2.0/mlflow/runs/get')?.params).toEqual({});
  });

  it('does not treat a query string in the path as one', () => {
    expect(matcher.match('GET', '/api/2.0/mlflow/runs/get?run_id=1')).toBeUndefined();
  });

  it('knows which paths are API paths', () => {
    for (const p of ['/api/2.0/mlflow/unknown', '/ajax-api/x', '/graphql', '/get-artifact', '/model-versions/x', '/v1/metrics', '/gateway/x']) {
      expect(isApiPath(p), p).toBe(true);
    }
    for (const p of ['/', '/static-files/x.js', '/favicon.ico', '/apidocs']) {
      expect(isApiPath(p), p).toBe(false);
    }
  });
});

describe('the catalog against every recorded MLflow release (src/authz/catalog-versions.json)', () => {
  it('records one release per 3.x minor from 3.0, oldest first', () => {
    const minors = RECORDED_RELEASES.map((v) => v.split('.').slice(0, 2).join('.'));
    expect(minors[0]).toBe('3.0');
    expect(new Set(minors).size).toBe(minors.length);
    expect([...RECORDED_RELEASES].sort(compareVersions)).toEqual(RECORDED_RELEASES);
    expect(compareVersions('3.10.1', '3.9.0')).toBeGreaterThan(0);
  });

  it.each(RECORDED_RELEASES)('MLflow %s: every route classified', (release) => {
    expect(unclassifiedRoutes(matcher, routesOf(release)!)).toEqual([]);
  });

  it.each(RECORDED_RELEASES)('MLflow %s: the rows recorded for it are exactly those its routes land on', (release) => {
    const hit = rowsHitBy(matcher, routesOf(release)!);
    const said = ROUTE_CATALOG.filter((row) => rowExistsIn(row, release));
    const key = (row: RouteEntry) => `${row.method} ${row.pattern}`;
    expect(said.filter((row) => !hit.has(row)).map(key), 'rows said to exist without a route').toEqual([]);
    expect(ROUTE_CATALOG.filter((row) => hit.has(row) && !rowExistsIn(row, release)).map(key), 'rows hit but said absent').toEqual([]);
    expect(rowsBroaderThanRoutes(said, routesOf(release)!)).toEqual([]);
  });

  it('every row selector names some catalog row', () => {
    expect(ROW_SELECTORS.filter((s) => !ROUTE_CATALOG.some((row) => selectorNames(s, row)))).toEqual([]);
  });

  it('has no routes for a release it did not record', () => {
    expect(routesOf('3.17.1')).toBeUndefined();
    expect(routesOf(NEWEST_RELEASE)!.length).toBeGreaterThan(routesOf(OLDEST_RELEASE)!.length);
  });

  it("Skills (MLflow 3.18) are a kind of their own, each row's need MLflow's operation for it, with and without an organization; the detection schedule state is EDIT on the experiment", () => {
    // MLflow's `_SKILL_ROUTE_OPERATIONS`: read → READ, update → EDIT, manage → MANAGE, register → EDIT or a create.
    for (const [method, path, need, params] of [
      ['GET', '/api/3.0/mlflow/skills', 'authenticated', {}],
      ['POST', '/api/3.0/mlflow/skills', 'create', {}],
      ['POST', '/api/3.0/mlflow/skills/bulk-register', 'edit', {}],
      ['GET', '/api/3.0/mlflow/skills/my-skill', 'read', { name: 'my-skill' }],
      ['GET', '/api/3.0/mlflow/skills/bulk-register', 'read', { name: 'bulk-register' }],
      ['GET', '/ajax-api/3.0/mlflow/skills/@acme/my-skill/versions/2', 'read', { organization: 'acme', name: 'my-skill', version: '2' }],
      ['GET', '/api/3.0/mlflow/skills/@acme/versions', 'read', { organization: 'acme', name: 'versions' }],
      ['DELETE', '/api/3.0/mlflow/skills/@acme/my-skill/tags/a/b', 'edit', { organization: 'acme', name: 'my-skill', '*': 'a/b' }],
      ['DELETE', '/api/3.0/mlflow/skills/my-skill/versions/1/tags/k', 'manage', { name: 'my-skill' }],
      ['PATCH', '/api/3.0/mlflow/skills/my-skill/versions/1', 'edit', { name: 'my-skill' }],
      ['POST', '/api/3.0/mlflow/skills/@acme/my-skill/versions', 'edit', { organization: 'acme', name: 'my-skill' }],
      ['DELETE', '/api/3.0/mlflow/skills/@acme/my-skill', 'manage', { organization: 'acme', name: 'my-skill' }],
      ['DELETE', '/api/3.0/mlflow/skills/my-skill/aliases/prod', 'manage', { name: 'my-skill' }],
      ['POST', '/api/3.0/mlflow/skills/my-skill/aliases', 'edit', { name: 'my-skill' }],
    ] as const) {
      const m = matcher.match(method, path);
      expect(m?.entry.need, `${method} ${path}`).toBe(need);
      expect(m?.entry.resource, `${method} ${path}`).toBe(need === 'authenticated' ? 'none' : 'skill');
      expect(m?.params, `${method} ${path}`).toMatchObject(params);
    }
    // A registration makes a Skill MLflow does not have yet; a version update to `deleted` is a delete.
    expect(matcher.match('POST', '/api/3.0/mlflow/skills/my-skill/versions')?.entry).toMatchObject({ createsMissing: true, after: 'register_skill' });
    expect(matcher.match('PATCH', '/api/3.0/mlflow/skills/my-skill/versions/1')?.entry.also).toEqual([
      { id: { kind: 'skill', field: 'name', from: 'param', when: { field: 'status', value: 'deleted' } }, need: 'manage' },
    ]);
    // No other route under /skills: refused to non-admins (route-not-found), not guessed at.
    for (const [method, path] of [
      ['PUT', '/api/3.0/mlflow/skills/my-skill'],
      ['GET', '/api/3.0/mlflow/skills/my-skill/tags'],
      ['GET', '/api/3.0/mlflow/skills/my-skill/unknown'],
      ['POST', '/api/3.0/mlflow/skills/my-skill'],
    ] as const)
      expect(matcher.match(method, path), `${method} ${path}`).toBeUndefined();
    const schedule = matcher.match('POST', '/ajax-api/3.0/mlflow/issues/schedule/state')?.entry;
    expect(schedule).toMatchObject({ need: 'edit', resource: 'experiment', id: { kind: 'experiment_id', field: 'experiment_id', from: 'body' } });
  });
});
