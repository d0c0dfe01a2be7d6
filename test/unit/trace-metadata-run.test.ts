import { describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { readField, type ResolveRequest } from '../../src/authz/resolve.js';
import type { IdSource } from '../../src/authz/types.js';

const request = (body: unknown): ResolveRequest => ({ method: 'POST', query: new URLSearchParams(), body, params: {}, headers: {} });
const sourceRunCheck = (method: string, pattern: string): IdSource => {
  const row = ROUTE_CATALOG.find((r) => r.method === method && r.pattern === pattern)!;
  const check = row.also?.find((a) => a.id.kind === 'run_id' && 'entry' in a.id && a.id.entry === 'mlflow.sourceRun');
  expect(check, `${method} ${pattern}`).toBeDefined();
  expect(check!.need).toBe('edit');
  return check!.id;
};

describe('a trace tied to a run through its metadata (mlflow.sourceRun)', () => {
  it('is checked on v3 start (map, both spellings) and v2 start and end (key/value lists), on both prefixes', () => {
    for (const prefix of ['/api', '/ajax-api']) {
      const v3 = sourceRunCheck('POST', `${prefix}/3.0/mlflow/traces`);
      expect(readField(v3, request({ trace: { trace_info: { trace_metadata: { 'mlflow.sourceRun': 'r-secret' } } } }))).toEqual(['r-secret']);
      expect(readField(v3, request({ trace: { traceInfo: { traceMetadata: { 'mlflow.sourceRun': 'r-secret', other: 'x' } } } }))).toEqual(['r-secret']);
      expect(readField(v3, request({ trace: { trace_info: { trace_metadata: { other: 'x' } } } }))).toEqual([]);
      for (const [method, pattern] of [
        ['POST', `${prefix}/2.0/mlflow/traces`],
        ['PATCH', `${prefix}/2.0/mlflow/traces/:request_id`],
      ] as const) {
        const v2 = sourceRunCheck(method, pattern);
        expect(readField(v2, request({ request_metadata: [{ key: 'a', value: 'b' }, { key: 'mlflow.sourceRun', value: 'r-secret' }] }))).toEqual(['r-secret']);
        expect(readField(v2, request({ requestMetadata: [{ key: ' MLFLOW.SOURCERUN', value: 'r-secret' }] }))).toEqual(['r-secret']);
      }
    }
  });

  it('refuses two different runs under near-spellings of the key', () => {
    const v3 = sourceRunCheck('POST', '/api/3.0/mlflow/traces');
    expect(() => readField(v3, request({ trace: { trace_info: { trace_metadata: { 'mlflow.sourceRun': 'r-own', 'MLFLOW.SOURCERUN': 'r-secret' } } } }))).toThrow(
      expect.objectContaining({ status: 400 }),
    );
  });
});
