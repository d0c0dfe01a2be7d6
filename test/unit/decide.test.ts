import { describe, expect, it } from 'vitest';
import { decide, effectivePermission, type GrantFacts } from '../../src/authz/decide.js';
import type { Need, Permission } from '../../src/authz/types.js';

const facts = (direct?: Permission, ...groups: Permission[]): GrantFacts => ({ direct, groups });

describe('effectivePermission: direct wins, then group deny, then strongest group, then default', () => {
  it.each<[string, GrantFacts, Permission, Permission, string]>([
    ['direct READ beats group MANAGE', facts('READ', 'MANAGE'), 'NO_PERMISSIONS', 'READ', 'direct-grant'],
    ['direct NO_PERMISSIONS beats group EDIT', facts('NO_PERMISSIONS', 'EDIT'), 'READ', 'NO_PERMISSIONS', 'direct-grant'],
    ['direct MANAGE', facts('MANAGE'), 'NO_PERMISSIONS', 'MANAGE', 'direct-grant'],
    ['NO_PERMISSIONS in any group denies', facts(undefined, 'MANAGE', 'NO_PERMISSIONS'), 'READ', 'NO_PERMISSIONS', 'group-deny'],
    ['strongest group grant', facts(undefined, 'READ', 'EDIT', 'READ'), 'NO_PERMISSIONS', 'EDIT', 'group-grant'],
    ['single group READ', facts(undefined, 'READ'), 'MANAGE', 'READ', 'group-grant'],
    ['no grants: default NO_PERMISSIONS', facts(), 'NO_PERMISSIONS', 'NO_PERMISSIONS', 'default-permission'],
    ['no grants: default READ', facts(), 'READ', 'READ', 'default-permission'],
  ])('%s', (_name, f, def, permission, reason) => {
    expect(effectivePermission(f, def)).toEqual({ permission, reason });
  });
});

describe('decide', () => {
  const base = { isAdmin: false, defaultPermission: 'NO_PERMISSIONS' as Permission, createRequiresAdmin: false };
  const table: Array<[Permission | undefined, Need, boolean]> = [
    ['READ', 'read', true], ['READ', 'edit', false], ['READ', 'manage', false],
    ['EDIT', 'read', true], ['EDIT', 'edit', true], ['EDIT', 'manage', false],
    ['MANAGE', 'read', true], ['MANAGE', 'edit', true], ['MANAGE', 'manage', true],
    ['NO_PERMISSIONS', 'read', false], ['NO_PERMISSIONS', 'edit', false], ['NO_PERMISSIONS', 'manage', false],
    [undefined, 'read', false],
  ];
  it.each(table)('direct %s for %s → %s', (p, need, allow) => {
    expect(decide({ ...base, need, facts: [facts(p)] }).allow).toBe(allow);
  });

  it('admins may do everything, including admin-only routes and NO_PERMISSIONS resources', () => {
    for (const need of ['read', 'edit', 'manage', 'admin', 'create'] as Need[])
      expect(decide({ ...base, isAdmin: true, need, facts: [facts('NO_PERMISSIONS')] })).toEqual({ allow: true, reason: 'admin' });
  });

  it('public and authenticated routes pass; admin routes do not', () => {
    expect(decide({ ...base, need: 'public', facts: [] }).allow).toBe(true);
    expect(decide({ ...base, need: 'authenticated', facts: [] }).allow).toBe(true);
    expect(decide({ ...base, need: 'admin', facts: [] })).toEqual({ allow: false, reason: 'admin-only-route' });
  });

  it('creation is open unless configured admin-only', () => {
    expect(decide({ ...base, need: 'create', facts: [] }).allow).toBe(true);
    expect(decide({ ...base, need: 'create', facts: [], createRequiresAdmin: true }).allow).toBe(false);
  });

  it('fails closed: a resource need with no resources resolved is denied', () => {
    expect(decide({ ...base, defaultPermission: 'MANAGE', need: 'read', facts: [] }).allow).toBe(false);
  });

  it('every resource must permit (multi-resource requests)', () => {
    expect(decide({ ...base, need: 'read', facts: [facts('READ'), facts('NO_PERMISSIONS')] }).allow).toBe(false);
    expect(decide({ ...base, need: 'read', facts: [facts('READ'), facts(undefined, 'EDIT')] }).allow).toBe(true);
  });

  it('the default permission applies without grants', () => {
    expect(decide({ ...base, defaultPermission: 'READ', need: 'read', facts: [facts()] })).toMatchObject({ allow: true, reason: 'default-permission' });
    expect(decide({ ...base, defaultPermission: 'READ', need: 'edit', facts: [facts()] }).allow).toBe(false);
  });
});

describe('pattern grants decide under their own reasons, by the same rule', () => {
  const base = { isAdmin: false, defaultPermission: 'READ' as Permission, createRequiresAdmin: false };
  const pattern = (direct?: Permission, ...groups: Permission[]): GrantFacts => ({ direct, groups, fromPattern: true });

  it.each<[string, GrantFacts, Permission, string]>([
    ["the caller's pattern grant", pattern('EDIT'), 'EDIT', 'pattern-grant'],
    ["the caller's pattern NO_PERMISSIONS beats the default", pattern('NO_PERMISSIONS'), 'NO_PERMISSIONS', 'pattern-grant'],
    ['the strongest group pattern grant', pattern(undefined, 'READ', 'MANAGE'), 'MANAGE', 'group-pattern-grant'],
    ['NO_PERMISSIONS in one group pattern denies', pattern(undefined, 'MANAGE', 'NO_PERMISSIONS'), 'NO_PERMISSIONS', 'group-pattern-deny'],
  ])('%s', (_name, f, permission, reason) => {
    expect(effectivePermission(f, 'READ')).toEqual({ permission, reason });
  });

  it('a refusal by pattern names the pattern reason', () => {
    expect(decide({ ...base, need: 'read', facts: [pattern(undefined, 'NO_PERMISSIONS')] })).toEqual({
      allow: false,
      reason: 'group-pattern-deny',
      permission: 'NO_PERMISSIONS',
    });
    expect(decide({ ...base, need: 'edit', facts: [facts('READ'), pattern('EDIT')] })).toMatchObject({ allow: false, reason: 'direct-grant' });
  });
});
