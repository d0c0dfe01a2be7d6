import { beforeAll, describe, expect, it } from 'vitest';
import { guardedField, RESERVED_TRACE_TAGS } from '../../src/authz/field-guards.js';
import { loadOtlpReader, type ResolveRequest } from '../../src/authz/resolve.js';

const request = (body: unknown, query = ''): ResolveRequest => ({ method: 'POST', query: new URLSearchParams(query), body, params: {}, headers: {} });

beforeAll(loadOtlpReader);

describe('field guards (fields MLflow reads as locations)', () => {
  it('refuses an OTLP export whose attributes would set a reserved trace tag', () => {
    const otlp = (key: string): ResolveRequest => ({
      ...request(undefined),
      headers: { 'content-type': 'application/json' },
      raw: Buffer.from(JSON.stringify({ resourceSpans: [{ scopeSpans: [{ spans: [{ traceId: '01'.repeat(16), attributes: [{ key, value: { stringValue: 'x' } }] }] }] }] })),
    });
    const guard = { kind: 'otlp_reserved_tags', field: 'body' } as const;
    expect(guardedField(guard, otlp('mlflow.traceTag.mlflow.artifactLocation'))).toContain('mlflow.artifactLocation');
    expect(guardedField(guard, otlp('mlflow.traceTag.team'))).toBeUndefined();
  });

  it('lists the trace tags MLflow treats as storage pointers', () => {
    expect([...RESERVED_TRACE_TAGS]).toEqual(expect.arrayContaining(['mlflow.artifactLocation', 'mlflow.trace.spansLocation']));
  });

  it('refuses a non-empty admin-only field under either spelling, and lets an empty one pass', () => {
    const guard = { kind: 'admin_only', field: 'artifact_location' } as const;
    expect(guardedField(guard, request({ name: 'e', artifact_location: 'file:///data/1' }))).toBe('artifact_location');
    expect(guardedField(guard, request({ name: 'e', artifactLocation: 'mlflow-artifacts:/1' }))).toBe('artifact_location');
    expect(guardedField(guard, request({ name: 'e', artifact_location: '' }))).toBeUndefined();
    expect(guardedField(guard, request({ name: 'e' }))).toBeUndefined();
  });

  it('refuses a reserved tag key given as one field', () => {
    const guard = { kind: 'reserved_tag_key', field: 'key' } as const;
    expect(guardedField(guard, request({ key: 'mlflow.artifactLocation', value: 'mlflow-artifacts:/1/traces/tr-x/artifacts' }))).toContain('mlflow.artifactLocation');
    // MLflow reads a POST's JSON body only: a key in its query string alone is refused.
    expect(() => guardedField(guard, request(undefined, 'key=mlflow.trace.spansLocation'))).toThrow(/JSON body/);
    expect(guardedField(guard, request({ key: 'MLFLOW.ARTIFACTLOCATION  ', value: 'x' }))).toBeDefined();
    expect(guardedField(guard, request({ key: 'team', value: 'a' }))).toBeUndefined();
  });

  it('refuses a reserved tag in a list of tags or in a tag map', () => {
    const list = { kind: 'reserved_tag_list', field: 'tags' } as const;
    expect(guardedField(list, request({ tags: [{ key: 'a', value: 'b' }, { key: 'mlflow.artifactLocation', value: 'x' }] }))).toContain('mlflow.artifactLocation');
    expect(guardedField(list, request({ tags: [{ key: 'a', value: 'b' }] }))).toBeUndefined();
    const map = { kind: 'reserved_tag_map', field: 'trace.trace_info.tags' } as const;
    expect(guardedField(map, request({ trace: { traceInfo: { tags: { 'mlflow.trace.spansLocation': 'x' } } } }))).toContain('spansLocation');
    expect(guardedField(map, request({ trace: { trace_info: { tags: { 'mlflow.user': 'me' } } } }))).toBeUndefined();
  });
});
