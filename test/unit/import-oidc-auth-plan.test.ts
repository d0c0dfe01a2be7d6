import { describe, expect, it } from 'vitest';
import { planOidcAuth } from '../../src/import/oidc-auth-plan.js';
import type { OidcAuthGrant, OidcAuthRule, OidcAuthState } from '../../src/import/oidc-auth-read.js';
import { globsOverlap, regexRegion, regexToGlob } from '../../src/import/oidc-auth-regex.js';
import type { PlanGrantee } from '../../src/import/plan.js';

/**
 * mlflow-oidc-auth's regex rules as flowgate globs: exact where a glob spells the same names
 * (`re.match`: anchored at the start only), refused otherwise; and the plan, which leaves out what
 * flowgate would decide differently and denies, never widens, what it leaves out.
 */
describe('regexToGlob', () => {
  it.each([
    ['^team-a-.*$', 'team-a-*'],
    ['^team-a-.*', 'team-a-*'],
    // re.match anchors the start only: without `$` the rest of the name is free.
    ['team-a-', 'team-a-*'],
    ['^team-a$', 'team-a'],
    ['^model-.$', 'model-?'],
    ['^.*-prod$', '*-prod'],
    ['^a.+b$', 'a?*b'],
    ['.*', '*'],
    ['', '*'],
    ['^v1\\.0-.*\\Z', 'v1.0-*'],
    ['^what\\?-.*$', 'what\\?-*'],
    ['^star\\*$', 'star\\*'],
    ['^a.*.*b$', 'a*b'],
    ['^équipe/ü-.*$', 'équipe/ü-*'],
  ])('%s → %s', (regex, glob) => {
    expect(regexToGlob(regex)).toEqual({ glob });
  });

  it.each([
    ['^team-[ab]-.*$', 'a character class'],
    ['^(team-a|team-b)-.*$', 'a group'],
    ['^team-a|team-b$', 'an alternation'],
    ['^team-\\d+$', "the escape '\\d'"],
    ['^teams?-.*$', 'a quantifier on a character'],
    ['^team-a-x*$', 'a quantifier on a character'],
    ['^a{2}$', 'a quantifier on a character'],
    ['^a.*?$', 'a lazy or possessive quantifier'],
    ['^a.?$', 'a counted or optional wildcard'],
    ['^a$b', "a '$' before the end"],
    ['(?i)^team-.*$', 'a group'],
    ['^$', 'it matches no name'],
    ['^a\\bb', "the escape '\\b'"],
  ])('%s is refused (%s)', (regex, reason) => {
    const t = regexToGlob(regex);
    expect('refused' in t && t.refused).toContain(reason);
  });

  it('the region of a refused regex is its literal beginning, or everything', () => {
    expect(regexRegion('^team-[ab]-.*$')).toBe('team-*');
    expect(regexRegion('^teams?-x')).toBe('team*');
    expect(regexRegion('^a|b')).toBe('*');
    expect(regexRegion('(?i)team')).toBe('*');
    expect(regexRegion('^v1\\.0\\d')).toBe('v1.0*');
    expect(regexRegion('^\\d+')).toBe('*');
  });

  it('globsOverlap is exact', () => {
    expect(globsOverlap('team-a-*', 'team-*')).toBe(true);
    expect(globsOverlap('team-a-*', 'team-b-*')).toBe(false);
    expect(globsOverlap('*-prod', 'team-*')).toBe(true);
    expect(globsOverlap('a?c', 'a*d')).toBe(false);
    expect(globsOverlap('12/*', '1/*')).toBe(false);
    expect(globsOverlap('a\\*', 'a?')).toBe(true);
    expect(globsOverlap('a\\*', 'ab')).toBe(false);
    expect(globsOverlap('*x*', '*y*')).toBe(true);
    expect(globsOverlap('x*', '*y')).toBe(true);
    expect(globsOverlap('x', 'y*')).toBe(false);
  });
});

const user = (name: string): PlanGrantee => ({ type: 'user', name });
const group = (name: string): PlanGrantee => ({ type: 'group', name });
let rowId = 0;
const rule = (grantee: PlanGrantee, regex: string, priority: number, permission: string, kind: OidcAuthRule['kinds'][number] = 'experiment', workspace: string | null = null): OidcAuthRule => ({
  grantee,
  kinds: [kind],
  regex,
  priority,
  permission,
  workspace,
  rowId: ++rowId,
});
const grant = (grantee: PlanGrantee, kinds: OidcAuthGrant['kinds'], id: string, permission: string, workspace: string | null = null): OidcAuthGrant => ({
  grantee,
  kinds,
  id,
  permission,
  workspace,
  rowId: ++rowId,
});
const state = (s: Partial<OidcAuthState>): OidcAuthState => ({ generation: 'revision test', users: [], groups: [], grants: [], rules: [], unread: [], ...s });
const person = (username: string, extra: Partial<OidcAuthState['users'][number]> = {}) => ({ username, displayName: undefined, isAdmin: false, isServiceAccount: false, active: true, ...extra });
const plan = (s: OidcAuthState) => planOidcAuth(s, { mlflowDefault: 'NO_PERMISSIONS', flowgateDefault: 'NO_PERMISSIONS' });

describe('planOidcAuth', () => {
  it('users, service accounts, groups and grants come over; a model grant is also the prompt of that name; inactive users are left out', () => {
    const p = plan(
      state({
        users: [person('root', { isAdmin: true }), person('bot', { isServiceAccount: true }), person('ann'), person('gone', { active: false })],
        groups: [{ name: 'team', members: ['ann', 'gone'] }],
        grants: [
          grant(user('ann'), ['experiment'], '7', 'EDIT'),
          grant(user('ann'), ['registered_model', 'prompt'], 'm', 'NO_PERMISSIONS'),
          grant(group('team'), ['experiment'], '7', 'USE'),
          grant(group('team'), ['experiment'], '7', 'READ', 'default'),
          grant(group('team'), ['gateway_endpoint'], 'chat', 'USE'),
          grant(user('gone'), ['experiment'], '7', 'MANAGE'),
          grant(user('ann'), ['experiment'], '8', 'READ', 'research'),
        ],
      }),
    );
    expect(p.users).toEqual([
      { username: 'root', isAdmin: true, isServiceAccount: false, signIn: 'local' },
      { username: 'bot', isAdmin: false, isServiceAccount: true, signIn: 'local' },
      { username: 'ann', isAdmin: false, isServiceAccount: false, signIn: 'local' },
    ]);
    expect(p.groups).toEqual([{ name: 'team', members: ['ann'] }]);
    expect(p.grants).toEqual(
      expect.arrayContaining([
        { grantee: user('ann'), kind: 'experiment', id: '7', permission: 'EDIT' },
        { grantee: user('ann'), kind: 'registered_model', id: 'm', permission: 'NO_PERMISSIONS' },
        { grantee: user('ann'), kind: 'prompt', id: 'm', permission: 'NO_PERMISSIONS' },
        // USE on an experiment is READ in flowgate; the two rows fold as the plugin folds them.
        { grantee: group('team'), kind: 'experiment', id: '7', permission: 'READ' },
        { grantee: group('team'), kind: 'gateway_endpoint', id: 'chat', permission: 'USE' },
      ]),
    );
    expect(p.grants).toHaveLength(5);
    expect(p.notImported).toContain('user gone: inactive in mlflow-oidc-auth (left out, with their grants and memberships)');
    expect(p.notImported).toContain('1 grants of user ann in workspace research (flowgate imports the default workspace only)');
    // The plugin falls back to the experiment for a scorer with no grant of its own.
    expect(p.patterns).toEqual(
      expect.arrayContaining([
        { grantee: user('ann'), kind: 'scorer', pattern: '7/*', permission: 'EDIT' },
        { grantee: group('team'), kind: 'scorer', pattern: '7/*', permission: 'READ' },
      ]),
    );
  });

  it('a translatable rule becomes a pattern grant; an untranslatable one is listed and its names denied to its holder', () => {
    const p = plan(
      state({
        users: [person('ann')],
        groups: [{ name: 'team', members: ['ann'] }],
        rules: [rule(user('ann'), '^team-a-.*$', 1, 'EDIT'), rule(group('team'), '^team-[bd]-.*', 5, 'READ'), rule(group('team'), '^other-.*', 5, 'READ', 'registered_model')],
      }),
    );
    expect(p.patterns).toEqual(
      expect.arrayContaining([
        { grantee: user('ann'), kind: 'experiment', pattern: 'team-a-*', permission: 'EDIT' },
        { grantee: group('team'), kind: 'experiment', pattern: 'team-*', permission: 'NO_PERMISSIONS' },
        { grantee: group('team'), kind: 'registered_model', pattern: 'other-*', permission: 'READ' },
      ]),
    );
    expect(p.patterns).toHaveLength(3);
    expect(p.notImported).toContain("group team: experiment regex '^team-[bd]-.*' (priority 5, READ): no exact glob: a character class");
  });

  it('a rule left out takes the holder’s overlapping rules with it; one granting MANAGE leaves no denial', () => {
    const p = plan(
      state({
        users: [person('ann')],
        rules: [rule(user('ann'), '^team-[ab]-x$', 1, 'READ'), rule(user('ann'), '^team-.*$', 2, 'EDIT'), rule(user('ann'), '^lab-.*', 3, 'READ'), rule(user('ann'), '^lab-[0-9]', 4, 'MANAGE')],
      }),
    );
    expect(p.patterns).toEqual([
      { grantee: user('ann'), kind: 'experiment', pattern: 'lab-*', permission: 'READ' },
      { grantee: user('ann'), kind: 'experiment', pattern: 'team-*', permission: 'NO_PERMISSIONS' },
    ]);
    expect(p.notImported).toContain("user ann: experiment regex '^team-.*$' (priority 2, EDIT): shares names with regex '^team-[ab]-x$' (priority 1, READ), which is not imported");
  });

  it('priorities that reorder: the rule flowgate would rank first is left out', () => {
    // The plugin: priority 1 first, so `team-a-x` is READ. flowgate: the more specific `team-a-*` (EDIT) would decide.
    const p = plan(state({ users: [person('ann')], rules: [rule(user('ann'), '^team-.*', 1, 'READ'), rule(user('ann'), '^team-a-.*', 2, 'EDIT')] }));
    expect(p.notImported.some((n) => n.startsWith("user ann: experiment regex '^team-a-.*' (priority 2, EDIT): regex '^team-.*' (priority 1, READ) decides the names both match first"))).toBe(true);
    // Every name it matches, `^team-.*` matches first: it decided nothing, so nothing is denied for it.
    expect(p.patterns).toEqual([{ grantee: user('ann'), kind: 'experiment', pattern: 'team-*', permission: 'READ' }]);
    // Where flowgate's order agrees (the specific rule has the lower number) both come over.
    const agree = plan(state({ users: [person('ann')], rules: [rule(user('ann'), '^team-a-.*', 1, 'EDIT'), rule(user('ann'), '^team-.*', 2, 'READ')] }));
    expect(agree.patterns).toEqual([
      { grantee: user('ann'), kind: 'experiment', pattern: 'team-a-*', permission: 'EDIT' },
      { grantee: user('ann'), kind: 'experiment', pattern: 'team-*', permission: 'READ' },
    ]);
    expect(agree.notImported).toEqual([]);
  });

  it('groups sharing a member: a later-priority rule the plugin never reaches for them is left out', () => {
    const rules = [rule(group('g1'), '^a-.*', 1, 'READ'), rule(group('g2'), '^a-b-.*', 2, 'MANAGE')];
    const shared = plan(state({ users: [person('ann')], groups: [{ name: 'g1', members: ['ann'] }, { name: 'g2', members: ['ann'] }], rules }));
    expect(shared.patterns).toEqual([{ grantee: group('g1'), kind: 'experiment', pattern: 'a-*', permission: 'READ' }]);
    expect(shared.notImported.some((n) => n.includes("for members of both groups g1's regex '^a-.*'"))).toBe(true);
    const apart = plan(state({ users: [person('ann'), person('bo')], groups: [{ name: 'g1', members: ['ann'] }, { name: 'g2', members: ['bo'] }], rules }));
    expect(apart.patterns).toHaveLength(2);
  });

  it('scorer rules are never translated; a group’s scorer rule takes its members’ experiment fallbacks out', () => {
    const p = plan(
      state({
        users: [person('ann')],
        groups: [{ name: 'team', members: ['ann'] }],
        grants: [grant(user('ann'), ['experiment'], '12', 'READ')],
        rules: [rule(group('team'), '^judge-.*$', 1, 'NO_PERMISSIONS', 'scorer')],
      }),
    );
    expect(p.notImported.some((n) => n.startsWith("group team: scorer regex '^judge-.*$'"))).toBe(true);
    expect(p.notImported.some((n) => n.startsWith('user ann: scorer scorers of experiment 12'))).toBe(true);
    expect(p.patterns).toEqual(
      expect.arrayContaining([
        { grantee: group('team'), kind: 'scorer', pattern: '*', permission: 'NO_PERMISSIONS' },
        { grantee: user('ann'), kind: 'scorer', pattern: '12/*', permission: 'NO_PERMISSIONS' },
      ]),
    );
  });

  it('rules of other workspaces are listed; rules for every workspace apply in default', () => {
    const p = plan(state({ users: [person('ann')], rules: [rule(user('ann'), '^x-.*', 1, 'READ', 'experiment', 'research'), rule(user('ann'), '^y-.*', 1, 'READ', 'registered_model', '*')] }));
    expect(p.patterns).toEqual([{ grantee: user('ann'), kind: 'registered_model', pattern: 'y-*', permission: 'READ' }]);
    expect(p.notImported[0]).toContain('in workspace research');
  });

  it('where flowgate signs people in through OIDC, its people come over awaiting their first OIDC sign-in (else refused as local users); service accounts never sign in', () => {
    const p = planOidcAuth(state({ users: [person('root', { isAdmin: true }), person('bot', { isServiceAccount: true }), person('ann')] }), {
      mlflowDefault: 'NO_PERMISSIONS',
      flowgateDefault: 'NO_PERMISSIONS',
      oidcSignIn: true,
    });
    expect(p.users.map((u) => [u.username, u.signIn])).toEqual([
      ['root', 'oidc'],
      ['bot', 'local'],
      ['ann', 'oidc'],
    ]);
  });

  it('a group refused (flowgate has one of that name): never merged; members keep the plugin’s answer on its grants as their own and are denied its rules’ names', () => {
    const p = planOidcAuth(
      state({
        users: [person('ann'), person('bo'), person('Cy')],
        groups: [
          { name: 'ml', members: ['ann', 'bo', 'Cy'] },
          { name: 'deny', members: ['ann'] },
        ],
        grants: [
          grant(group('ml'), ['experiment'], '7', 'MANAGE'),
          grant(group('deny'), ['experiment'], '7', 'NO_PERMISSIONS'),
          grant(user('bo'), ['experiment'], '7', 'READ'),
          grant(user('Cy'), ['experiment'], '9', 'EDIT'),
        ],
        rules: [rule(group('ml'), '^team-.*$', 1, 'EDIT'), rule(user('bo'), '^team-.*$', 1, 'READ')],
      }),
      {
        mlflowDefault: 'NO_PERMISSIONS',
        flowgateDefault: 'NO_PERMISSIONS',
        refused: { users: new Map([['Cy', "user Cy: flowgate has user 'cy', the same name in another case"]]), groups: new Map([['ml', 'group ml: flowgate already has this group']]) },
      },
    );
    expect(p.groups).toEqual([{ name: 'deny', members: ['ann'] }]);
    expect(p.users.map((u) => u.username)).toEqual(['ann', 'bo']);
    // Nothing names the group or the refused user.
    expect([...p.grants, ...p.patterns].some((x) => x.grantee.name === 'ml' || x.grantee.name === 'Cy')).toBe(false);
    expect(p.grants).toEqual(
      expect.arrayContaining([
        // ann: ml's MANAGE folded with deny's NO_PERMISSIONS, as the plugin folds groups: denied.
        { grantee: user('ann'), kind: 'experiment', id: '7', permission: 'NO_PERMISSIONS' },
        // bo's own grant decides in both: nothing added.
        { grantee: user('bo'), kind: 'experiment', id: '7', permission: 'READ' },
      ]),
    );
    expect(p.grants.filter((g) => g.grantee.name === 'bo')).toHaveLength(1);
    // ml's rule: its names are denied to ann; bo's own rule on the same names decides them in both.
    expect(p.patterns).toContainEqual({ grantee: user('ann'), kind: 'experiment', pattern: 'team-*', permission: 'NO_PERMISSIONS' });
    expect(p.patterns).toContainEqual({ grantee: user('bo'), kind: 'experiment', pattern: 'team-*', permission: 'READ' });
    expect(p.notImported).toContain('group ml: flowgate already has this group (left out, with its grants and members: each member keeps the plugin\'s answer on its grants as their own, and is denied the names its rules match)');
    expect(p.notImported).toContain("user Cy: flowgate has user 'cy', the same name in another case (left out, with their grants and memberships)");
  });

  it('a grant on an id flowgate refuses (a tampered database) is left out, never read as a glob: an experiment id `*` gave no one every scorer', () => {
    const p = plan(
      state({
        users: [person('ann')],
        grants: [
          grant(user('ann'), ['experiment'], '*', 'MANAGE'),
          grant(user('ann'), ['experiment'], '1?', 'EDIT'),
          grant(user('ann'), ['experiment'], '07', 'READ'),
          grant(user('ann'), ['experiment'], '8', 'READ'),
          grant(user('ann'), ['scorer'], '*/judge', 'MANAGE'),
          grant(user('ann'), ['registered_model', 'prompt'], 'bad\u0007name', 'EDIT'),
        ],
      }),
    );
    expect(p.grants).toEqual([{ grantee: user('ann'), kind: 'experiment', id: '8', permission: 'READ' }]);
    expect(p.patterns).toEqual([{ grantee: user('ann'), kind: 'scorer', pattern: '8/*', permission: 'READ' }]);
    const listed = p.notImported.join('\n');
    for (const line of ['user ann: MANAGE on experiment "*" (', 'user ann: EDIT on experiment "1?" (', 'user ann: READ on experiment "07" (', 'user ann: MANAGE on scorer "*/judge" (', 'user ann: EDIT on registered_model "bad\\u0007name" ('])
      expect(listed).toContain(line);
  });

  it('says when the plugin’s default permission is not flowgate’s', () => {
    const p = planOidcAuth(state({}), { mlflowDefault: 'NO_PERMISSIONS', flowgateDefault: 'READ' });
    expect(p.notes.join('\n')).toContain("DEFAULT_MLFLOW_PERMISSION was taken as NO_PERMISSIONS, flowgate's FLOWGATE_DEFAULT_PERMISSION is READ");
  });
});
