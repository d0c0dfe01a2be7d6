import { describe, expect, it } from 'vitest';
import { readClaimPath, rolesFrom, stringClaim } from '../../src/oidc/claims.js';

const token = {
  sub: 'u1',
  preferred_username: 'alice',
  groups: ['team-a', 'team-b'],
  realm_access: { roles: ['offline_access', 'team-a'] },
  resource_access: { flowgate: { roles: ['editor'] } },
  'https://example.com/roles': ['x'],
  nested: { list: [1, 2], nil: null, str: 'one' },
  name: '  Alice A  ',
  empty: '',
};

describe('readClaimPath', () => {
  it.each([
    ['groups', ['team-a', 'team-b']],
    ['realm_access.roles', ['offline_access', 'team-a']],
    ['resource_access.flowgate.roles', ['editor']],
    ['https://example.com/roles', ['x']],
    ['nested.str', 'one'],
    ['nested.nil', null],
    ['nested.list.0', undefined],
    ['missing', undefined],
    ['realm_access.missing', undefined],
    ['groups.length', undefined],
    ['sub.length', undefined],
    ['__proto__', undefined],
    ['constructor', undefined],
    ['', undefined],
  ])('%s', (path, expected) => {
    expect(readClaimPath(token, path)).toEqual(expected);
  });

  it('reads nothing from non-objects', () => {
    expect(readClaimPath(null, 'a')).toBeUndefined();
    expect(readClaimPath(['a'], '0')).toBeUndefined();
    expect(readClaimPath('str', 'length')).toBeUndefined();
  });
});

describe('rolesFrom', () => {
  it.each([
    [['a', 'b'], ['a', 'b']],
    [['a', 'a', ' b '], ['a', 'b']],
    ['solo', ['solo']],
    [['ok', 3, null, {}, '', '  ', 'bad\nrole', 'x'.repeat(300)], ['ok']],
    [undefined, []],
    [null, []],
    [42, []],
    [{ roles: ['a'] }, []],
  ])('%j', (value, expected) => {
    expect(rolesFrom(value)).toEqual(expected);
  });
});

describe('stringClaim', () => {
  it.each([
    ['preferred_username', 'alice'],
    ['name', 'Alice A'],
    ['empty', undefined],
    ['groups', undefined],
    ['nested.str', 'one'],
  ])('%s', (path, expected) => {
    expect(stringClaim(token, path)).toBe(expected);
  });
});
