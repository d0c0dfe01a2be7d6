import fc from 'fast-check';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { decide, effectivePermission, type GrantFacts } from '../../src/authz/decide.js';
import { withPatterns, type PatternFacts } from '../../src/authz/pattern-facts.js';
import { createPatternIndex, type PatternGrant } from '../../src/authz/pattern-index.js';
import { patternProblem } from '../../src/authz/pattern-match.js';
import type { Permission, ResourceKind } from '../../src/authz/types.js';

/** Counts every pattern tested against a name, to show which look-ups test none or few. */
const tested = vi.hoisted(() => ({ count: 0 }));
vi.mock('../../src/authz/pattern-match.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/authz/pattern-match.js')>();
  return {
    ...real,
    compilePattern: (pattern: string) => {
      const c = real.compilePattern(pattern);
      return {
        ...c,
        matches: (name: string) => (tested.count++, c.matches(name)),
        matchesPrepared: (name: ArrayLike<string>) => (tested.count++, c.matchesPrepared(name)),
      };
    },
  };
});
beforeEach(() => {
  tested.count = 0;
});

const user = (id: number, pattern: string, permission: Permission, kind: ResourceKind = 'experiment'): PatternGrant => ({
  kind,
  pattern,
  grantee: { type: 'user', id },
  permission,
});
const group = (id: number, pattern: string, permission: Permission, kind: ResourceKind = 'experiment'): PatternGrant => ({
  kind,
  pattern,
  grantee: { type: 'group', id },
  permission,
});

describe('pattern index: who a name matches', () => {
  it("splits the caller's own pattern grant from their groups', ignoring everyone else's", () => {
    const index = createPatternIndex([
      user(1, 'team-a/*', 'EDIT'),
      user(2, 'team-a/*', 'MANAGE'),
      group(10, 'team-a/*', 'READ'),
      group(11, 'team-*', 'NO_PERMISSIONS'),
      group(12, 'team-a/*', 'MANAGE'),
    ]);
    expect(index.factsFor('experiment', 'team-a/churn', 1, [10, 11])).toEqual({ direct: 'EDIT', groups: ['READ', 'NO_PERMISSIONS'] });
    expect(index.factsFor('experiment', 'team-a/churn', 3, [12])).toEqual({ direct: undefined, groups: ['MANAGE'] });
    expect(index.factsFor('experiment', 'team-b/churn', 1, [10, 11])).toEqual({ direct: undefined, groups: ['NO_PERMISSIONS'] });
    expect(index.factsFor('experiment', 'other', 1, [10, 11, 12])).toEqual({ direct: undefined, groups: [] });
  });

  it('keeps kinds apart', () => {
    const index = createPatternIndex([user(1, 'churn-*', 'READ', 'registered_model')]);
    expect(index.factsFor('registered_model', 'churn-v2', 1, []).direct).toBe('READ');
    expect(index.factsFor('experiment', 'churn-v2', 1, []).direct).toBeUndefined();
    expect(index.factsFor('prompt', 'churn-v2', 1, []).direct).toBeUndefined();
  });

  it('tests only the patterns whose literal prefix starts the name', () => {
    const grants = Array.from({ length: 1000 }, (_, i) => user(i + 1, `team-${i}/*`, 'READ'));
    const index = createPatternIndex([...grants, user(5000, '*-prod', 'EDIT')]);
    expect(index.matching('experiment', 'team-42/churn').map((g) => g.pattern)).toEqual(['team-42/*']);
    // The prefix "" (of *-prod) and "team-42/"; not the 999 other teams.
    expect(tested.count).toBe(2);
  });

  it('answers a repeated name from its cache, and forgets on reload', () => {
    const index = createPatternIndex([user(1, 'team-a/*', 'READ')]);
    expect(index.factsFor('experiment', 'team-a/x', 1, []).direct).toBe('READ');
    const first = tested.count;
    expect(first).toBeGreaterThan(0);
    expect(index.factsFor('experiment', 'team-a/x', 1, []).direct).toBe('READ');
    expect(index.factsFor('experiment', 'team-a/x', 2, []).direct).toBeUndefined();
    expect(tested.count).toBe(first);

    index.reload([user(1, 'team-a/*', 'NO_PERMISSIONS')]);
    expect(index.factsFor('experiment', 'team-a/x', 1, []).direct).toBe('NO_PERMISSIONS');
    expect(tested.count).toBeGreaterThan(first);
  });

  it('remembers a bounded number of names', () => {
    const index = createPatternIndex([user(1, 'n*', 'READ')], { cacheSize: 2 });
    for (const name of ['n1', 'n2', 'n3']) index.factsFor('experiment', name, 1, []);
    expect(tested.count).toBe(3);
    index.factsFor('experiment', 'n3', 1, []);
    expect(tested.count).toBe(3);
    index.factsFor('experiment', 'n1', 1, []);
    expect(tested.count).toBe(4);
  });

  it('keeps the old grants when a reload holds a pattern that does not compile', () => {
    const index = createPatternIndex([user(1, 'team-a/*', 'READ')]);
    expect(() => index.reload([user(1, 'team-b/*', 'READ'), user(1, 'no-wildcard', 'MANAGE')])).toThrow(/no wildcard/);
    expect(index.factsFor('experiment', 'team-a/x', 1, []).direct).toBe('READ');
    expect(index.size).toBe(1);
  });
});

describe("pattern index: the most specific of a grantee's matching patterns decides", () => {
  it.each<[string, PatternGrant[], string, Permission]>([
    ['the longest literal prefix wins (narrower deny)', [user(1, 'team-a/*', 'READ'), user(1, 'team-a/prod-*', 'NO_PERMISSIONS')], 'team-a/prod-x', 'NO_PERMISSIONS'],
    ['the longest literal prefix wins (narrower allow)', [user(1, 'team-a/*', 'NO_PERMISSIONS'), user(1, 'team-a/prod-*', 'MANAGE')], 'team-a/prod-x', 'MANAGE'],
    ['a broader pattern still decides where the narrow one misses', [user(1, 'team-a/*', 'READ'), user(1, 'team-a/prod-*', 'NO_PERMISSIONS')], 'team-a/dev', 'READ'],
    ['the same prefix: the longest pattern wins', [user(1, 'team-a/*', 'EDIT'), user(1, 'team-a/*-prod', 'READ')], 'team-a/x-prod', 'READ'],
    ['a longer prefix beats a longer pattern', [user(1, 't*-very-long-suffix', 'MANAGE'), user(1, 'team*', 'READ')], 'team-very-long-suffix', 'READ'],
    ['alike on both: the lesser permission', [user(1, 'a*b', 'MANAGE'), user(1, 'a?*', 'READ')], 'axb', 'READ'],
  ])('%s', (_name, grants, name, expected) => {
    expect(createPatternIndex(grants).factsFor('experiment', name, 1, []).direct).toBe(expected);
    expect(createPatternIndex([...grants].reverse()).factsFor('experiment', name, 1, []).direct).toBe(expected);
  });

  it("a group's own patterns resolve the same way, to one permission for that group", () => {
    const index = createPatternIndex([group(10, '*', 'NO_PERMISSIONS'), group(10, 'team-a/*', 'READ'), group(11, 'team-*', 'EDIT')]);
    expect(index.factsFor('experiment', 'team-a/x', 1, [10, 11]).groups).toEqual(['READ', 'EDIT']);
    expect(index.factsFor('experiment', 'team-b/x', 1, [10, 11]).groups).toEqual(['NO_PERMISSIONS', 'EDIT']);
  });
});

describe('pattern grants composed with the grants on the resource itself', () => {
  const none: GrantFacts = { direct: undefined, groups: [] };
  const facts = (direct?: Permission, ...groups: Permission[]): GrantFacts => ({ direct, groups });
  const patterns = (direct?: Permission, ...groups: Permission[]): PatternFacts => ({ direct, groups });

  it.each<[string, GrantFacts, PatternFacts, Permission, boolean]>([
    ['direct grant first', facts('READ'), patterns('MANAGE'), 'READ', false],
    ['a direct NO_PERMISSIONS wins over a pattern', facts('NO_PERMISSIONS'), patterns('MANAGE', 'MANAGE'), 'NO_PERMISSIONS', false],
    ["the resource's group grant beats the caller's pattern", facts(undefined, 'EDIT'), patterns('NO_PERMISSIONS'), 'EDIT', false],
    ["the resource's group deny beats the caller's pattern", facts(undefined, 'READ', 'NO_PERMISSIONS'), patterns('MANAGE'), 'NO_PERMISSIONS', false],
    ["the caller's pattern grant", none, patterns('READ', 'MANAGE'), 'READ', true],
    ["the caller's pattern NO_PERMISSIONS beats their groups' patterns", none, patterns('NO_PERMISSIONS', 'MANAGE'), 'NO_PERMISSIONS', true],
    ["the strongest of the groups' patterns", none, patterns(undefined, 'READ', 'EDIT'), 'EDIT', true],
    ["NO_PERMISSIONS in one group's pattern denies", none, patterns(undefined, 'MANAGE', 'NO_PERMISSIONS'), 'NO_PERMISSIONS', true],
    ['nothing at all: the default', none, patterns(), 'READ', false],
  ])('%s', (_name, f, p, permission, fromPattern) => {
    const composed = withPatterns(f, p);
    expect(effectivePermission(composed, 'READ').permission).toBe(permission);
    expect(composed.fromPattern === true).toBe(fromPattern);
  });

  it('a pattern grant gives access to a new experiment named to match, and a direct NO_PERMISSIONS still wins', () => {
    const index = createPatternIndex([user(7, 'team-a/*', 'EDIT')]);
    const ask = (resourceFacts: GrantFacts) =>
      decide({
        isAdmin: false,
        need: 'edit',
        facts: [withPatterns(resourceFacts, index.factsFor('experiment', 'team-a/new-experiment', 7, []))],
        defaultPermission: 'NO_PERMISSIONS',
        createRequiresAdmin: false,
      });
    expect(ask(none)).toMatchObject({ allow: true, permission: 'EDIT' });
    expect(ask(facts('NO_PERMISSIONS'))).toMatchObject({ allow: false, permission: 'NO_PERMISSIONS', reason: 'direct-grant' });
    expect(decide({
      isAdmin: false,
      need: 'read',
      facts: [withPatterns(none, index.factsFor('experiment', 'team-b/other', 7, []))],
      defaultPermission: 'NO_PERMISSIONS',
      createRequiresAdmin: false,
    })).toMatchObject({ allow: false, reason: 'default-permission' });
  });
});

describe('property: the index answers what a scan of every pattern answers', () => {
  const RANK: Record<Permission, number> = { NO_PERMISSIONS: 0, READ: 1, USE: 2, EDIT: 3, MANAGE: 4 };
  const alphabet = fc.constantFrom('a', 'b', '/', '😀');
  const text = (max: number) => fc.array(alphabet, { maxLength: max }).map((c) => c.join(''));
  const pattern = fc
    .array(fc.oneof(alphabet, fc.constant('*'), fc.constant('?'), fc.constant('\\*')), { minLength: 1, maxLength: 6 })
    .map((p) => p.join(''))
    .filter((p) => patternProblem(p) === undefined);
  /** A kind without USE and one with it (a gateway endpoint), each with the levels it takes. */
  const KIND_LEVELS: ReadonlyArray<readonly [ResourceKind, readonly Permission[]]> = [
    ['experiment', ['NO_PERMISSIONS', 'READ', 'EDIT', 'MANAGE']],
    ['prompt', ['NO_PERMISSIONS', 'READ', 'EDIT', 'MANAGE']],
    ['gateway_endpoint', ['NO_PERMISSIONS', 'READ', 'USE', 'EDIT', 'MANAGE']],
  ];
  const grant = fc.constantFrom(...KIND_LEVELS).chain(([kind, levels]) =>
    fc.record({
      kind: fc.constant(kind),
      pattern,
      grantee: fc.oneof(
        fc.integer({ min: 1, max: 4 }).map((id) => ({ type: 'user' as const, id })),
        fc.integer({ min: 1, max: 4 }).map((id) => ({ type: 'group' as const, id })),
      ),
      permission: fc.constantFrom(...levels),
    }),
  );
  const TOKENS = /\\(.)|(\*)|(\?)|(.)/gsu;
  /** The same glob as a regular expression, written independently of the matcher. */
  const regex = (p: string) =>
    new RegExp(`^${[...p.matchAll(TOKENS)].map(([, esc, star, one, lit]) =>
      star ? '.*' : one ? '.' : (esc ?? lit)!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('')}$`, 'su');
  const literalPrefixLength = (p: string) => {
    let n = 0;
    for (const [, esc, star, one, lit] of p.matchAll(TOKENS)) {
      if (star || one) break;
      n += (esc ?? lit)!.length;
    }
    return n;
  };

  /** Keeps one grant per grantee+kind+pattern, as the table's unique index does. */
  const unique = (grants: PatternGrant[]) =>
    [...new Map(grants.map((g) => [`${g.kind}|${g.grantee.type}|${g.grantee.id}|${g.pattern}`, g])).values()];

  function naive(grants: PatternGrant[], kind: ResourceKind, name: string, userId: number, groupIds: number[]) {
    const hits = grants.filter((g) => g.kind === kind && regex(g.pattern).test(name));
    const best = (own: PatternGrant[]) =>
      own.sort((a, b) =>
        literalPrefixLength(b.pattern) - literalPrefixLength(a.pattern) ||
        [...b.pattern].length - [...a.pattern].length ||
        RANK[a.permission] - RANK[b.permission])[0]?.permission;
    return {
      hits,
      facts: {
        direct: best(hits.filter((g) => g.grantee.type === 'user' && g.grantee.id === userId)),
        groups: groupIds.map((id) => best(hits.filter((g) => g.grantee.type === 'group' && g.grantee.id === id))).filter((p) => p !== undefined),
      },
    };
  }

  it('for random grants, names and callers, cold and warm', () => {
    fc.assert(
      fc.property(
        fc.array(grant, { maxLength: 30 }).map(unique),
        fc.array(fc.tuple(fc.constantFrom(...KIND_LEVELS.map(([kind]) => kind)), text(6)), { minLength: 1, maxLength: 10 }),
        fc.integer({ min: 1, max: 4 }),
        fc.uniqueArray(fc.integer({ min: 1, max: 4 })),
        (grants, names, userId, groupIds) => {
          const index = createPatternIndex(grants, { cacheSize: 4 });
          for (const [kind, name] of [...names, ...names]) {
            const expected = naive(grants, kind, name, userId, groupIds);
            expect(new Set(index.matching(kind, name))).toEqual(new Set(expected.hits));
            expect(index.factsFor(kind, name, userId, groupIds)).toEqual(expected.facts);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
