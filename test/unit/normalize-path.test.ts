import { describe, expect, it } from 'vitest';
import { normalizeFully, normalizeTarget, ownRoutePath, stripBasePath } from '../../src/proxy/normalize-path.js';

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

describe('the already-normal fast path', () => {
  const outcome = (f: () => unknown) => {
    try {
      return { ok: f() };
    } catch (e) {
      return { error: (e as Error).message };
    }
  };
  // Every shape near the fast path's edge: it must answer exactly as the full normalization does.
  const paths = [
    '/api/2.0/mlflow/runs/get',
    '/api/2.0/mlflow-artifacts/artifacts/1/abc/artifacts/model.txt',
    '/ajax-api/2.0/mlflow/experiments/search/',
    '/a~b/-c/_d',
    '/a..b/c.d.e',
    '/',
    '//api/2.0/mlflow/runs/get',
    '/api//2.0',
    '/api/./x',
    '/api/../x',
    '/api/.hidden',
    '/api/x/..',
    '/api/%2e%2e/x',
    '/api/a%2Fb',
    '/api\\x',
    '/api/a b',
    '/api/ä',
    "/api/a:b@c!$&'()*+,;=",
    'api/no-slash',
  ];
  for (const path of paths)
    it(`answers ${JSON.stringify(path)} like the full normalization`, () => {
      const fast = outcome(() => normalizeTarget(`${path}?x=1`));
      const full = outcome(() => normalizeFully(path, 'x=1'));
      expect(fast).toEqual(full);
    });
});

describe('ownRoutePath', () => {
  it.each([
    ['/api/2.0/mlflow/permissions/users/alice', '/api/2.0/mlflow/permissions/users/alice'],
    ['/p/secrets/..%2F..%2Fusers%2Fbob', '/p/secrets/..%2F..%2Fusers%2Fbob'],
    ['/p/groups/%2Fml-team/users', '/p/groups/%2Fml-team/users'],
    ['/p/skills/%40acme/x', '/p/skills/@acme/x'],
    ['/p//users/a/?q=1', '/p/users/a/'],
    ['/p\\users\\a%5Cb', '/p/users/a%5Cb'],
  ])('keeps an encoded / inside its segment: %s', (raw, expected) => {
    expect(ownRoutePath(raw)).toBe(expected);
  });

  it.each(['/p/users/../bob', '/p/users/%2E%2E/bob', '/p/users/./bob', '/p/users/bob/.', '/p\\..\\users'])('answers no path for a dot segment: %s', (raw) => {
    expect(ownRoutePath(raw)).toBeUndefined();
  });
});
