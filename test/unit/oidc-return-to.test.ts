import { describe, expect, it } from 'vitest';
import { safeReturnTo } from '../../src/oidc/return-to.js';

describe('safeReturnTo at the root', () => {
  it.each([
    ['/', '/'],
    ['/#/experiments/1', '/#/experiments/1'],
    ['/static-files/lib/x.js?v=2', '/static-files/lib/x.js?v=2'],
    ['/flowgate/access-key', '/flowgate/access-key'],
    ['/a%20b', '/a%20b'],
  ])('keeps %j', (raw, expected) => {
    expect(safeReturnTo(raw, '')).toBe(expected);
  });

  it.each([
    [undefined],
    [null],
    [''],
    ['//evil.example'],
    ['//evil.example/path'],
    ['/\\evil.example'],
    ['\\\\evil.example'],
    ['/\t/evil.example'],
    ['/\r\n/evil.example'],
    ['/\n/evil.example'],
    ['/ok\u0000'],
    ['/ok\u007f'],
    ['https://evil.example/'],
    ['http:evil.example'],
    ['javascript:alert(1)'],
    ['evil.example'],
    ['/%2F%2Fevil.example'],
    ['/%2f/evil.example'],
    ['/%5Cevil.example'],
    ['/%252F%252Fevil.example'],
    ['/%09/evil.example'],
    ['/%0d%0a/evil.example'],
    ['/%E0%A4%A'],
    ['/flowgate/login'],
    ['/flowgate/callback?code=x'],
    ['/flowgate/logout'],
    ['/' + 'a'.repeat(3000)],
    // Resolving the dot segment after an encoded `?` or `#` left `//evil.example`.
    ['/%3F/..//evil.example'],
    ['/%23/..//evil.example/phish'],
    ['/%3f/../%2e%2e//evil.example'],
    ['/a/%3F/../..//evil.example'],
  ])('refuses %j', (raw) => {
    expect(safeReturnTo(raw, '')).toBe('/');
  });
});

describe('safeReturnTo under a base path', () => {
  it.each([
    ['/mlflow', '/mlflow'],
    ['/mlflow/', '/mlflow/'],
    ['/mlflow/#/models', '/mlflow/#/models'],
    ['/mlflow/ajax-api/2.0/x?y=1', '/mlflow/ajax-api/2.0/x?y=1'],
  ])('keeps %j', (raw, expected) => {
    expect(safeReturnTo(raw, '/mlflow')).toBe(expected);
  });

  it.each([['/'], ['/other'], ['/mlflowx/'], ['/mlflow/../etc'], ['/mlflow//evil.example'], ['/mlflow/flowgate/login'], ['//evil.example/mlflow/']])(
    'refuses %j',
    (raw) => {
      expect(safeReturnTo(raw, '/mlflow')).toBe('/mlflow/');
    },
  );
});
