import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { createRouteMatcher, type RouteMatcher } from '../../src/authz/route-matcher.js';
import type { RouteEntry } from '../../src/authz/types.js';
import { preflightRoute } from '../../src/proxy/cors-preflight.js';

const preflight = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
const ORIGIN = 'https://dashboard.example';
const catalog = createRouteMatcher(ROUTE_CATALOG);

describe('preflightRoute', () => {
  it('names the catalog route a preflight announces, by the announced method', () => {
    const req = preflight({ origin: ORIGIN, 'access-control-request-method': 'POST' });
    expect(preflightRoute(req, '/api/2.0/mlflow/runs/log-metric', catalog)).toBe('/api/2.0/mlflow/runs/log-metric');
    expect(preflightRoute(req, '/api/2.0/mlflow/runs/get', catalog)).toBeUndefined();
    const get = preflight({ origin: ORIGIN, 'access-control-request-method': 'GET' });
    expect(preflightRoute(get, '/api/2.0/mlflow/runs/get', catalog)).toBe('/api/2.0/mlflow/runs/get');
  });

  it('is undefined for what is not a preflight', () => {
    const notPreflights: Array<Record<string, string>> = [{}, { origin: ORIGIN }, { 'access-control-request-method': 'GET' }, { origin: '', 'access-control-request-method': 'GET' }, { origin: ORIGIN, 'access-control-request-method': 'OPTIONS' }];
    for (const headers of notPreflights)
      expect(preflightRoute(preflight(headers), '/api/2.0/mlflow/runs/get', catalog), JSON.stringify(headers)).toBeUndefined();
  });

  it("never hands flowgate's admin API to MLflow, even if a route matched there", () => {
    const everything: RouteMatcher = { match: () => ({ entry: { pattern: '/anything' } as RouteEntry, params: {} }) };
    const req = preflight({ origin: ORIGIN, 'access-control-request-method': 'POST' });
    expect(preflightRoute(req, '/api/2.0/mlflow/runs/get', everything)).toBe('/anything');
    for (const path of ['/api/2.0/mlflow/users/create', '/api/2.0/mlflow/permissions/grants', '/ajax-api/2.0/mlflow/users'])
      expect(preflightRoute(req, path, everything), path).toBeUndefined();
  });
});
