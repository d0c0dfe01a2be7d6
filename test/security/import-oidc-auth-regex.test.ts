import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { effectivePermission } from '../../src/authz/decide.js';
import { NO_PATTERN_FACTS, withPatterns } from '../../src/authz/pattern-facts.js';
import { createPatternIndex, type PatternGrant } from '../../src/authz/pattern-index.js';
import { planOidcAuth } from '../../src/import/oidc-auth-plan.js';
import type { OidcAuthGrant, OidcAuthRule } from '../../src/import/oidc-auth-read.js';
import type { PlanGrantee } from '../../src/import/plan.js';
import { rank, type Permission } from '../../src/resources/permissions.js';

/**
 * The attacker's view of `flowgate import mlflow-oidc-auth`'s regex rules: an operator's rule set
 * (any mix of exact and inexact regexes, priorities, groups sharing members) must never come out of
 * the import giving anyone more than the plugin gave them on any name. The plugin's answer is its
 * resolution rewritten here from `utils/grant_context.py` (the user's rules, then their groups'
 * pooled: best priority tier, a denial or the strongest within it; `re.match`, which JavaScript's
 * `^(?:…)` matches alike for these regexes); flowgate's is its own pattern index and decision rule
 * over the patterns the plan writes. The end-to-end test holds the same against the plugin's own
 * Python resolver on a real database.
 */
const PERMS = ['READ', 'USE', 'EDIT', 'MANAGE', 'NO_PERMISSIONS'] as const;
const REGEXES = [
  // exact
  '^a-.*$', '^a.*', 'a-', '^.*-x$', '^a.b$', '^ab$', '.*', '^a-b-.*', '^b.*',
  // inexact: classes, alternations, groups, quantifiers on characters
  '^a[ab]-.*', '^(a|b)-.*', '^a-x?$', '^[^a].*', '^a|b', '^b+-', '^a-[0-9x]', '^.*(x|b)$',
];
const pluginRank = (p: Permission) => (p === 'NO_PERMISSIONS' ? 100 : rank(p));

/** The plugin's `best_matching_regex`: lowest priority tier, then a denial or the strongest. */
function best(rules: readonly OidcAuthRule[], name: string): Permission | undefined {
  const matching = rules.filter((r) => new RegExp(`^(?:${r.regex})`, 'u').test(name));
  if (matching.length === 0) return undefined;
  const tier = Math.min(...matching.map((r) => r.priority));
  return matching
    .filter((r) => r.priority === tier)
    .map((r) => r.permission as Permission)
    .reduce((a, b) => (pluginRank(b) > pluginRank(a) ? b : a));
}

const USER: PlanGrantee = { type: 'user', name: 'ann' };
const GROUPS: PlanGrantee[] = [
  { type: 'group', name: 'g1' },
  { type: 'group', name: 'g2' },
];
const IDS: Record<string, number> = { 'user ann': 1, 'user other': 2, 'group g1': 11, 'group g2': 12 };

const ruleArb = fc.record({
  who: fc.constantFrom<PlanGrantee>(USER, ...GROUPS),
  regex: fc.constantFrom(...REGEXES),
  priority: fc.integer({ min: 1, max: 3 }),
  permission: fc.constantFrom(...PERMS),
});
const nameArb = fc.stringMatching(/^[abx0-9-]{1,6}$/);

describe('import mlflow-oidc-auth: no regex rule comes out wider', () => {
  it('for any rule set and any name, flowgate gives the user no more than the plugin did (and the same where nothing was left out)', () => {
    fc.assert(
      fc.property(fc.array(ruleArb, { minLength: 1, maxLength: 6 }), fc.subarray(['g1', 'g2']), fc.array(nameArb, { minLength: 1, maxLength: 12 }), (drawn, memberOf, names) => {
        const rules: OidcAuthRule[] = drawn.map((r, i) => ({ grantee: r.who, kinds: ['experiment'], regex: r.regex, priority: r.priority, permission: r.permission, workspace: null, rowId: i + 1 }));
        const plan = planOidcAuth(
          {
            generation: 'property',
            users: [{ username: 'ann', displayName: undefined, isAdmin: false, isServiceAccount: false, active: true }, { username: 'other', displayName: undefined, isAdmin: false, isServiceAccount: false, active: true }],
            groups: [
              { name: 'g1', members: memberOf.includes('g1') ? ['ann', 'other'] : ['other'] },
              { name: 'g2', members: memberOf.includes('g2') ? ['ann', 'other'] : ['other'] },
            ],
            grants: [],
            rules,
            unread: [],
          },
          { mlflowDefault: 'NO_PERMISSIONS', flowgateDefault: 'NO_PERMISSIONS' },
        );
        const index = createPatternIndex(
          plan.patterns.map((p): PatternGrant => ({ kind: p.kind, pattern: p.pattern, permission: p.permission, grantee: { type: p.grantee.type, id: IDS[`${p.grantee.type} ${p.grantee.name}`]! } as PatternGrant['grantee'] })),
        );
        const groupIds = memberOf.map((g) => IDS[`group ${g}`]!);
        const own = rules.filter((r) => r.grantee.type === 'user');
        const pooled = rules.filter((r) => r.grantee.type === 'group' && memberOf.includes(r.grantee.name));
        for (const name of names) {
          // flowgate's experiments have no USE (MLflow asks none of them): the plugin's USE reads as READ.
          const raw = best(own, name) ?? best(pooled, name) ?? 'NO_PERMISSIONS';
          const plugin = raw === 'USE' ? 'READ' : raw;
          const facts = withPatterns({ direct: undefined, groups: NO_PATTERN_FACTS.groups }, index.factsFor('experiment', name, 1, groupIds));
          const flowgate = effectivePermission(facts, 'NO_PERMISSIONS').permission;
          if (rank(flowgate) > rank(plugin)) throw new Error(`'${name}': flowgate ${flowgate}, the plugin ${plugin}\n${JSON.stringify({ rules, memberOf, patterns: plan.patterns, notImported: plan.notImported }, null, 1)}`);
          if (plan.notImported.length === 0) expect(flowgate).toBe(plugin);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it('merging into an existing group refused: with any grants and rules, leaving out the groups flowgate already has gives ann nothing the plugin did not', () => {
    // Registered models: their grants and their rules both name them (an experiment's grant names its
    // id, which the import takes in plain decimal only, its rules its name).
    const GRANT_IDS = ['a-', 'a-b', 'ab', 'b', 'x'];
    const grantArb = fc.record({ who: fc.constantFrom<PlanGrantee>(USER, ...GROUPS), id: fc.constantFrom(...GRANT_IDS), permission: fc.constantFrom(...PERMS) });
    fc.assert(
      fc.property(
        fc.array(ruleArb, { maxLength: 6 }),
        fc.array(grantArb, { maxLength: 6 }),
        fc.subarray(['g1', 'g2']),
        fc.subarray(['g1', 'g2'], { minLength: 1 }),
        fc.array(nameArb, { minLength: 1, maxLength: 8 }),
        (drawnRules, drawnGrants, memberOf, refusedGroups, names) => {
          const rules: OidcAuthRule[] = drawnRules.map((r, i) => ({ grantee: r.who, kinds: ['registered_model'], regex: r.regex, priority: r.priority, permission: r.permission, workspace: null, rowId: i + 1 }));
          const grants: OidcAuthGrant[] = drawnGrants.map((g, i) => ({ grantee: g.who, kinds: ['registered_model'], id: g.id, permission: g.permission, workspace: null, rowId: 100 + i }));
          const plan = planOidcAuth(
            {
              generation: 'property',
              users: [{ username: 'ann', displayName: undefined, isAdmin: false, isServiceAccount: false, active: true }, { username: 'other', displayName: undefined, isAdmin: false, isServiceAccount: false, active: true }],
              groups: [
                { name: 'g1', members: memberOf.includes('g1') ? ['ann', 'other'] : ['other'] },
                { name: 'g2', members: memberOf.includes('g2') ? ['ann', 'other'] : ['other'] },
              ],
              grants,
              rules,
              unread: [],
            },
            { mlflowDefault: 'NO_PERMISSIONS', flowgateDefault: 'NO_PERMISSIONS', refused: { users: new Map(), groups: new Map(refusedGroups.map((g) => [g, `group ${g}: flowgate already has this group`])) } },
          );
          expect([...plan.groups.map((g) => g.name), ...[...plan.grants, ...plan.patterns].map((x) => x.grantee.name)].some((n) => refusedGroups.includes(n))).toBe(false);
          const index = createPatternIndex(
            plan.patterns
              .filter((p) => p.kind === 'registered_model')
              .map((p): PatternGrant => ({ kind: p.kind, pattern: p.pattern, permission: p.permission, grantee: { type: p.grantee.type, id: IDS[`${p.grantee.type} ${p.grantee.name}`]! } as PatternGrant['grantee'] })),
          );
          const imported = memberOf.filter((g) => !refusedGroups.includes(g));
          const own = rules.filter((r) => r.grantee.type === 'user');
          const pooled = rules.filter((r) => r.grantee.type === 'group' && memberOf.includes(r.grantee.name));
          for (const name of [...names, ...GRANT_IDS]) {
            // The plugin: the user's own grant (the oldest), their groups' folded, then the rules.
            const ownGrant = grants.find((g) => g.grantee.type === 'user' && g.id === name)?.permission as Permission | undefined;
            const groupGrants = grants.filter((g) => g.grantee.type === 'group' && memberOf.includes(g.grantee.name) && g.id === name).map((g) => g.permission as Permission);
            const folded = groupGrants.length === 0 ? undefined : groupGrants.reduce((a, b) => (pluginRank(b) > pluginRank(a) ? b : a));
            const raw = ownGrant ?? folded ?? best(own, name) ?? best(pooled, name) ?? 'NO_PERMISSIONS';
            const plugin = raw === 'USE' ? 'READ' : raw;
            const direct = plan.grants.find((g) => g.grantee.type === 'user' && g.grantee.name === 'ann' && g.kind === 'registered_model' && g.id === name)?.permission;
            const viaGroups = plan.grants.filter((g) => g.grantee.type === 'group' && imported.includes(g.grantee.name) && g.kind === 'registered_model' && g.id === name).map((g) => g.permission);
            const facts = withPatterns({ direct, groups: viaGroups }, index.factsFor('registered_model', name, 1, imported.map((g) => IDS[`group ${g}`]!)));
            const flowgate = effectivePermission(facts, 'NO_PERMISSIONS').permission;
            if (rank(flowgate) > rank(plugin))
              throw new Error(`'${name}': flowgate ${flowgate}, the plugin ${plugin}\n${JSON.stringify({ rules, grants, memberOf, refusedGroups, plan }, null, 1)}`);
          }
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('an inexact regex never grants a name it would not match: `^team-[ab]-.*` gives nothing on team-c-x', () => {
    const plan = planOidcAuth(
      {
        generation: 'attack',
        users: [{ username: 'ann', displayName: undefined, isAdmin: false, isServiceAccount: false, active: true }],
        groups: [],
        grants: [],
        rules: [{ grantee: USER, kinds: ['experiment'], regex: '^team-[ab]-.*', priority: 1, permission: 'MANAGE', workspace: null, rowId: 1 }],
        unread: [],
      },
      { mlflowDefault: 'NO_PERMISSIONS', flowgateDefault: 'NO_PERMISSIONS' },
    );
    expect(plan.patterns).toEqual([]);
    expect(plan.notImported).toEqual(["user ann: experiment regex '^team-[ab]-.*' (priority 1, MANAGE): no exact glob: a character class"]);
  });
});
