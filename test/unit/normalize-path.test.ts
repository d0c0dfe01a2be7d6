import { describe, expect, it } from 'vitest';
import { normalizeTarget, stripBasePath } from '../../src/proxy/normalize-path.js';

describe('normalizeTarget', () => {
  it.each([
    ['/api/2.0/mlflow/runs/get?run_id=1', '/api/2.0/mlflow/runs/get', 'run_id=1'],
    ['//api///2.0//mlflow/runs/get', '/api/2.0/mlflow/runs/get', ''],
    ['/api/2.0/x/../mlflow/./runs/get', '/api/2.0/mlflow/runs/get', ''],
    ['/api/2.0/mlflow%2Fruns%2Fget', '/api/2.0/mlflow/runs/get', ''],
    ['/api/2.0/mlflow%2fruns/get', '/api/2.0/mlflow/runs/get', ''],
    ['/api\\2.0\\mlflow/runs/get', '/api/2.0/mlflow/runs/get', ''],
    ['/api/2.0/mlflow%5Cruns/get', '/api/2.0/mlflow/runs/get', ''],
    ['/api/2.0/%2e%2e/2.0/mlflow/runs/get', '/api/2.0/mlflow/runs/get', ''],
    ['/api/2.0/mlflow/runs/get#frag', '/api/2.0/mlflow/runs/get', ''],
    ['/a/b/', '/a/b/', ''],
    ['/', '/', ''],
  ])('%s → %s', (raw, path, search) => {
    const t = normalizeTarget(raw);
    expect(t.path).toBe(path);
    expect(t.search).toBe(search);
  });

  it('re-encodes segments for matching and forwarding', () => {
    const t = normalizeTarget('/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/my%20file%3Bv=1.txt');
    expect(t.path).toBe('/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/my file;v=1.txt');
    expect(t.encoded).toBe('/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/my%20file%3Bv=1.txt');
  });

  it.each([
    ['double encoding', '/api/2.0/mlflow%252Fruns/get'],
    ['malformed escape', '/api/%zz'],
    ['control character', '/api/2.0/mlflow/runs%00/get'],
    ['newline', '/api/2.0/mlflow%0a/runs'],
    ['climbing above root', '/../etc/passwd'],
    ['encoded climb above root', '/%2e%2e/%2e%2e/x'],
    ['absolute-form', 'http://evil/api'],
  ])('refuses %s with 400', (_n, raw) => {
    expect(() => normalizeTarget(raw)).toThrowError(expect.objectContaining({ status: 400 }));
  });
});

describe('stripBasePath', () => {
  it('keeps paths under the base and drops the rest', () => {
    expect(stripBasePath('/mlflow/api/x', '/mlflow')).toBe('/api/x');
    expect(stripBasePath('/mlflow', '/mlflow')).toBe('/');
    expect(stripBasePath('/mlflowx/api', '/mlflow')).toBeUndefined();
    expect(stripBasePath('/api', '')).toBe('/api');
  });
});
