import { compilePattern, patternProblem } from '../authz/pattern-match.js';
import type { ResourceKind } from '../authz/types.js';
import { KINDS } from '../resources/kinds.js';
import { isPermission, rank, type Permission } from '../resources/permissions.js';
import type { OidcAuthGrant, OidcAuthRule, OidcAuthState } from './oidc-auth-read.js';
import { globsOverlap, regexRegion, regexToGlob } from './oidc-auth-regex.js';
import { grantIdProblem } from './refusals.js';
import { granteeText, NO_REFUSALS, type ImportPlan, type PlanGrant, type PlanGrantee, type PlanPattern, type PlanRefusals, type PlanUser } from './plan.js';

export interface OidcAuthPlanOptions {
  /** The plugin's DEFAULT_MLFLOW_PERMISSION (its configuration; the database does not hold it). */
  readonly mlflowDefault: Permission;
  /** flowgate's FLOWGATE_DEFAULT_PERMISSION, to say when the two differ. */
  readonly flowgateDefault: Permission;
  /**
   * Whether flowgate signs people in through OIDC (FLOWGATE_OIDC_*): then a person comes over as the
   * admin API makes one there (`sign_in: oidc`, awaiting their first sign-in), else `local`.
   */
  readonly oidcSignIn?: boolean;
  /** Users and groups flowgate's store keeps out (refusals.ts); see `planOidcAuth`. */
  readonly refused?: PlanRefusals;
}

const DEFAULT_WORKSPACE = 'default';
/** The plugin's mark on a pattern that applies in every workspace (so in `default` too). */
const EVERY_WORKSPACE = '*';
const inDefault = (workspace: string | null, pattern: boolean) => workspace === null || workspace === DEFAULT_WORKSPACE || (pattern && workspace === EVERY_WORKSPACE);

/**
 * The plugin's fold of grants that compete (a user's groups' grants, or rules of one priority):
 * `compare_permissions` ranks NO_PERMISSIONS (100) above MANAGE, so a denial anywhere wins, else
 * the strongest. flowgate folds its groups' grants by the same rule.
 */
const pluginRank = (p: Permission) => (p === 'NO_PERMISSIONS' ? 100 : rank(p));
const pluginFold = (a: Permission, b: Permission) => (pluginRank(b) > pluginRank(a) ? b : a);

/** The plugin's level as flowgate's for the kind: USE is READ where flowgate's kind has no USE (MLflow asks none of it). */
function levelFor(kind: ResourceKind, word: string): Permission | undefined {
  if (!isPermission(word)) return undefined;
  if (word === 'USE' && !(KINDS[kind].permissions as readonly Permission[]).includes('USE')) return 'READ';
  return word;
}

const keyOf = (g: PlanGrantee) => `${g.type}\u0000${g.name}`;

/**
 * The user and group grants on single resources. The plugin decides by the same two steps flowgate
 * does (a user's own grant, then their groups' folded with a denial winning), so they come over as
 * they are; of a user's duplicates (one per workspace column state) the plugin reads `default`'s,
 * else the oldest, and so does the import.
 */
function directGrants(grants: readonly OidcAuthGrant[], notImported: string[]): PlanGrant[] {
  const byKey = new Map<string, PlanGrant & { rank: [number, number] }>();
  const elsewhere = new Map<string, number>();
  for (const g of grants) {
    if (!inDefault(g.workspace, false)) {
      const k = `${granteeText(g.grantee)} in workspace ${g.workspace}`;
      elsewhere.set(k, (elsewhere.get(k) ?? 0) + 1);
      continue;
    }
    for (const kind of g.kinds) {
      const permission = levelFor(kind, g.permission);
      if (permission === undefined) {
        notImported.push(`${granteeText(g.grantee)}: ${g.permission} on ${kind} ${g.id} (not a level flowgate knows)`);
        continue;
      }
      const idProblem = grantIdProblem(kind, g.id);
      if (idProblem !== undefined) {
        notImported.push(`${granteeText(g.grantee)}: ${g.permission} on ${kind} ${JSON.stringify(g.id)} (not an id flowgate takes: ${idProblem})`);
        continue;
      }
      const key = `${keyOf(g.grantee)}\u0000${kind}\u0000${g.id}`;
      const held = byKey.get(key);
      const order: [number, number] = [g.workspace === DEFAULT_WORKSPACE ? 0 : 1, g.rowId];
      if (held === undefined) byKey.set(key, { grantee: g.grantee, kind, id: g.id, permission, rank: order });
      else if (g.grantee.type === 'group') byKey.set(key, { ...held, permission: pluginFold(held.permission, permission) });
      else if (order[0] < held.rank[0] || (order[0] === held.rank[0] && order[1] < held.rank[1])) byKey.set(key, { ...held, permission, rank: order });
    }
  }
  for (const [who, n] of elsewhere) notImported.push(`${n} grants of ${who} (flowgate imports the default workspace only)`);
  return [...byKey.values()].map(({ rank: _, ...g }) => g);
}

/** One rule the pattern step weighs: a translated regex, one left untranslated, or an experiment grant's scorers. */
interface Candidate {
  readonly grantee: PlanGrantee;
  readonly kind: ResourceKind;
  /** The exact glob, or undefined when there is none. */
  readonly glob: string | undefined;
  /** A glob every name the rule may match matches (the glob itself when exact). */
  readonly region: string;
  readonly permission: Permission;
  readonly priority: number;
  readonly label: string;
  dropped?: string;
  /** Its names are denied to its holder when it is left out (unless nothing it decided could come out wider). */
  denies?: boolean;
}

/**
 * Whether leaving the rule out could give its holder more than the plugin did on a name it decides:
 * only a rule granting MANAGE (the most there is) cannot, and one whose names another rule of its
 * holder decides first in both systems (a same-glob duplicate) decides nothing.
 */
const needsDenial = (c: Candidate) => c.permission !== 'MANAGE';

/** flowgate's choice between two matching patterns of one holder (src/authz/pattern-index.ts, `moreSpecific`). */
function flowgatePrefers(a: Candidate, b: Candidate): boolean {
  const pa = compilePattern(a.glob!).literalPrefix.length;
  const pb = compilePattern(b.glob!).literalPrefix.length;
  if (pa !== pb) return pa > pb;
  const la = [...a.glob!].length;
  const lb = [...b.glob!].length;
  if (la !== lb) return la > lb;
  return rank(a.permission) < rank(b.permission);
}

/** Whether every name `inner` matches `outer` matches too (sure only for `outer` a literal beginning then `*`). */
function covers(outer: string, inner: string): boolean {
  const { literalPrefix } = compilePattern(outer);
  if (outer !== `${literalPrefix.replace(/[*?\\]/g, (c) => `\\${c}`)}*`) return false;
  // Every name `inner` matches starts with its own literal beginning.
  return compilePattern(inner).literalPrefix.startsWith(literalPrefix);
}

/** The plugin's: the lower priority number, then within one priority the fold (a denial, else the strongest). */
const pluginPrefers = (a: Candidate, b: Candidate) => (a.priority !== b.priority ? a.priority < b.priority : pluginRank(a.permission) > pluginRank(b.permission));

function candidatesOf(rules: readonly OidcAuthRule[], notImported: string[]): Candidate[] {
  const out: Candidate[] = [];
  for (const r of rules) {
    const label = `regex '${r.regex}' (priority ${r.priority}, ${r.permission})`;
    if (!inDefault(r.workspace, true)) {
      notImported.push(`${granteeText(r.grantee)}: ${r.kinds.join('/')} ${label} in workspace ${r.workspace} (flowgate imports the default workspace only)`);
      continue;
    }
    for (const kind of r.kinds) {
      const permission = levelFor(kind, r.permission);
      if (permission === undefined) {
        notImported.push(`${granteeText(r.grantee)}: ${kind} ${label} (not a level flowgate knows)`);
        continue;
      }
      const base = { grantee: r.grantee, kind, permission, priority: r.priority, label };
      // flowgate matches a scorer's patterns against `<experiment_id>/<name>`, the plugin's rule the name alone.
      if (kind === 'scorer') {
        out.push({ ...base, glob: undefined, region: '*', dropped: 'the plugin matches it against the scorer name alone, flowgate against <experiment_id>/<name>: no glob says "any experiment, then this name"' });
        continue;
      }
      const t = regexToGlob(r.regex);
      const problem = 'glob' in t ? patternProblem(t.glob) : undefined;
      if ('glob' in t && problem === undefined) out.push({ ...base, glob: t.glob, region: t.glob });
      else {
        const region = regexRegion(r.regex);
        out.push({ ...base, glob: undefined, region: patternProblem(region) === undefined ? region : '*', dropped: 'refused' in t ? `no exact glob: ${t.refused}` : `no exact pattern: ${problem}` });
      }
    }
  }
  return out;
}

/**
 * The pattern step. Both systems try a user's own patterns first, then their groups'; they differ in
 * which of several matching patterns decides: the plugin the lowest priority number (its groups'
 * patterns pooled, a denial or the strongest within one priority), flowgate the most specific of each
 * holder's, its groups' folded. A rule comes over only where the two agree on every name it shares
 * with another rule that competes with it; what is left out never leaves more access behind: its
 * names (a glob wider than the regex, where inexact) are denied to its holder, and that holder's other
 * rules on them are left out too.
 */
function settlePatterns(cands: Candidate[], sharesMember: (a: string, b: string) => boolean, notImported: string[], notes: string[]): PlanPattern[] {
  const kept = () => cands.filter((c) => c.dropped === undefined);
  const denials = new Map<string, { grantee: PlanGrantee; kind: ResourceKind; globs: Set<string> }>();
  const drop = (c: Candidate, why: string) => {
    c.dropped = why;
  };
  // Same holder, same glob: the plugin's first of them decides every name they share, so the rest decide none.
  const seen = new Map<string, Candidate>();
  for (const c of kept()) {
    const key = `${keyOf(c.grantee)}\u0000${c.kind}\u0000${c.glob}`;
    const held = seen.get(key);
    if (held === undefined) seen.set(key, c);
    else {
      const [winner, loser] = pluginPrefers(c, held) ? [c, held] : [held, c];
      seen.set(key, winner);
      loser.denies = false;
      drop(loser, `decides no name: ${winner.label} matches the same names first`);
    }
  }
  const processed = new Set<Candidate>();
  for (let changed = true; changed; ) {
    changed = false;
    const live = kept();
    for (let i = 0; i < live.length; i++)
      for (let j = i + 1; j < live.length; j++) {
        const a = live[i]!;
        const b = live[j]!;
        if (a.dropped || b.dropped || a.kind !== b.kind || a.permission === b.permission || !globsOverlap(a.glob!, b.glob!)) continue;
        const same = keyOf(a.grantee) === keyOf(b.grantee);
        if (same && pluginPrefers(a, b) !== flowgatePrefers(a, b)) {
          const [first, loser] = pluginPrefers(a, b) ? [a, b] : [b, a];
          drop(loser, `${first.label} decides the names both match first, flowgate would rank this one first`);
          // Every name it matches the first matches too: in the plugin it decided nothing.
          if (covers(first.glob!, loser.glob!)) loser.denies = false;
          changed = true;
        } else if (!same && a.grantee.type === 'group' && b.grantee.type === 'group' && a.priority !== b.priority && sharesMember(a.grantee.name, b.grantee.name)) {
          const [first, later] = a.priority < b.priority ? [a, b] : [b, a];
          if (pluginFold(first.permission, later.permission) !== first.permission) {
            drop(later, `for members of both groups ${first.grantee.name}'s ${first.label} decides first, flowgate would fold both`);
            changed = true;
          }
        }
      }
    for (const c of cands) {
      if (c.dropped === undefined || processed.has(c)) continue;
      processed.add(c);
      if (c.denies === false || !needsDenial(c)) continue;
      const key = `${keyOf(c.grantee)}\u0000${c.kind}`;
      const entry = denials.get(key) ?? { grantee: c.grantee, kind: c.kind, globs: new Set<string>() };
      entry.globs.add(c.region);
      denials.set(key, entry);
      for (const other of kept())
        if (keyOf(other.grantee) === keyOf(c.grantee) && other.kind === c.kind && globsOverlap(other.glob!, c.region)) {
          drop(other, `shares names with ${c.label}, which is not imported`);
          changed = true;
        }
    }
  }
  for (const c of cands) if (c.dropped !== undefined) notImported.push(`${granteeText(c.grantee)}: ${c.kind} ${c.label}: ${c.dropped}`);
  const out: PlanPattern[] = kept().map((c) => ({ grantee: c.grantee, kind: c.kind, pattern: c.glob!, permission: c.permission }));
  for (const d of denials.values())
    for (const glob of d.globs) {
      out.push({ grantee: d.grantee, kind: d.kind, pattern: glob, permission: 'NO_PERMISSIONS' });
      notes.push(`${granteeText(d.grantee)}: NO_PERMISSIONS on every ${d.kind} matching ${glob}, where rules left out could decide (denied, never widened: grant by hand what they gave)`);
    }
  return out;
}

/**
 * The grants of a membership left out (a refused group's, or a service account's in any group), as the
 * member's own: on each resource the group has a grant on, a member holding no grant of their own there
 * gets the plugin's answer for them, their groups' grants folded (a denial winning), which their own
 * grant decides in flowgate too. Returns the grants without the refused groups'.
 */
function pinRefusedGroupGrants(
  grants: readonly PlanGrant[],
  allGroups: ReadonlyArray<{ readonly name: string; readonly members: readonly string[] }>,
  isRefused: (g: PlanGrantee) => boolean,
  leftOut: (group: string, member: string) => boolean,
  notes: string[],
): PlanGrant[] {
  const key = (user: string, kind: ResourceKind, id: string) => `${user}\u0000${kind}\u0000${id}`;
  const own = new Set(grants.filter((g) => g.grantee.type === 'user').map((g) => key(g.grantee.name, g.kind, g.id)));
  const pinned = new Map<string, PlanGrant>();
  for (const group of allGroups) {
    const its = grants.filter((g) => g.grantee.type === 'group' && g.grantee.name === group.name);
    if (its.length === 0) continue;
    let made = 0;
    for (const member of group.members) {
      if (!leftOut(group.name, member)) continue;
      const mine = allGroups.filter((h) => h.members.includes(member)).map((h) => h.name);
      for (const g of its) {
        const k = key(member, g.kind, g.id);
        if (own.has(k) || pinned.has(k)) continue;
        const levels = grants.filter((h) => h.grantee.type === 'group' && mine.includes(h.grantee.name) && h.kind === g.kind && h.id === g.id).map((h) => h.permission);
        const permission = levels.reduce(pluginFold);
        pinned.set(k, { grantee: { type: 'user', name: member }, kind: g.kind, id: g.id, permission });
        made++;
      }
    }
    if (made === 0) continue;
    if (isRefused({ type: 'group', name: group.name }))
      notes.push(`group ${group.name} (not imported): its members get ${made} grants of their own, each the plugin's answer for them with the group's grants among their groups'`);
    else notes.push(`group ${group.name}: its service accounts (in no group in flowgate) get ${made} grants of their own, each the plugin's answer for them with the group's grants among their groups'`);
  }
  return [...grants.filter((g) => !isRefused(g.grantee)), ...pinned.values()];
}

/**
 * The patterns of a membership left out (a refused group's, or a service account's in any group), as
 * denials of the member's own on the same names: nothing a pattern of the group decided comes out wider
 * (the member's own rules on those names still decide first, as in the plugin; a member's own pattern
 * on the very same names decides all of them, so it needs none). Returns the patterns without the
 * refused groups'.
 */
function denyRefusedGroupPatterns(
  patterns: readonly PlanPattern[],
  memberSets: ReadonlyMap<string, ReadonlySet<string>>,
  isRefused: (g: PlanGrantee) => boolean,
  leftOut: (group: string, member: string) => boolean,
  notes: string[],
): PlanPattern[] {
  const key = (user: string, kind: ResourceKind, glob: string) => `${user}\u0000${kind}\u0000${glob}`;
  const own = new Set(patterns.filter((p) => p.grantee.type === 'user').map((p) => key(p.grantee.name, p.kind, p.pattern)));
  const out = patterns.filter((p) => !isRefused(p.grantee));
  const denied = new Set<string>();
  const perGroup = new Map<string, number>();
  for (const p of patterns) {
    if (p.grantee.type !== 'group') continue;
    for (const member of memberSets.get(p.grantee.name) ?? []) {
      if (!leftOut(p.grantee.name, member)) continue;
      const k = key(member, p.kind, p.pattern);
      if (own.has(k) || denied.has(k)) continue;
      denied.add(k);
      out.push({ grantee: { type: 'user', name: member }, kind: p.kind, pattern: p.pattern, permission: 'NO_PERMISSIONS' });
      perGroup.set(p.grantee.name, (perGroup.get(p.grantee.name) ?? 0) + 1);
    }
  }
  for (const [group, n] of perGroup)
    notes.push(
      isRefused({ type: 'group', name: group })
        ? `group ${group} (not imported): ${n} NO_PERMISSIONS patterns of its members' own on the names its patterns match (denied, never widened: grant by hand what it gave)`
        : `group ${group}: ${n} NO_PERMISSIONS patterns of its service accounts' own (in no group in flowgate) on the names its patterns match (denied, never widened: grant by hand what it gave)`,
    );
  return out;
}

/**
 * The plan for an mlflow-oidc-auth database (its schema generations 7 to 11): users (administrators,
 * service accounts; inactive ones left out), groups and their members, user and group grants, regex
 * rules as pattern grants where a glob is exact and flowgate would decide as the plugin did, and a
 * scorer's fallback to its experiment's grant as a pattern on the experiment's scorers.
 *
 * A refused user is left out as an inactive one is. A refused group is left out with its members and
 * grants, and no member comes out wider for it: on each resource it has a grant on, a member gets the
 * plugin's answer (their groups' grants folded, the refused group's among them) as a grant of their own,
 * unless they hold one already; the names each of its patterns matches are denied to each member by a
 * pattern of their own (which their own rules on those names still decide first, as in the plugin).
 * A service account (the plugin's, or a user flowgate holds as one) is in no group, since a flowgate
 * service account joins none: its memberships are left out the same way, its groups' answers its own.
 */
export function planOidcAuth(state: OidcAuthState, o: OidcAuthPlanOptions): ImportPlan {
  const refused = o.refused ?? NO_REFUSALS;
  const notImported = [...state.unread];
  const notes: string[] = [];
  const inactive = new Set(state.users.filter((u) => !u.active).map((u) => u.username));
  for (const u of inactive) notImported.push(`user ${u}: inactive in mlflow-oidc-auth (left out, with their grants and memberships)`);
  for (const [name, line] of refused.users) if (!inactive.has(name)) notImported.push(`${line} (left out, with their grants and memberships)`);
  const leftOut = new Set([...inactive, ...refused.users.keys()]);
  const users: PlanUser[] = state.users
    .filter((u) => !leftOut.has(u.username))
    .map((u) => ({
      username: u.username,
      isAdmin: u.isAdmin,
      isServiceAccount: u.isServiceAccount,
      ...(u.displayName ? { displayName: u.displayName } : {}),
      signIn: o.oidcSignIn === true && !u.isServiceAccount ? 'oidc' : 'local',
    }));
  // Every group as the plugin decides with it; `groups` below are the ones written.
  const allGroups = state.groups.map((g) => ({ name: g.name, members: g.members.filter((m) => !leftOut.has(m)) }));
  const isRefused = (g: PlanGrantee) => g.type === 'group' && refused.groups.has(g.name);
  // A flowgate service account joins no group (the admin API and SCIM refuse it): the plugin's service
  // accounts, and users flowgate holds as service accounts, come over in none, keeping what their groups
  // gave as their own, as a refused group's members do.
  const serviceAccounts = new Set([...users.filter((u) => u.isServiceAccount).map((u) => u.username), ...(refused.serviceAccounts ?? [])]);
  const membershipLeftOut = (group: string, member: string) => refused.groups.has(group) || serviceAccounts.has(member);
  for (const g of allGroups)
    if (refused.groups.has(g.name))
      notImported.push(`${refused.groups.get(g.name)!} (left out, with its grants and members: each member keeps the plugin's answer on its grants as their own, and is denied the names its rules match)`);
    else
      for (const m of g.members.filter((n) => serviceAccounts.has(n)))
        notImported.push(
          `membership of service account ${m} in group ${g.name}: a flowgate service account joins no group (the admin API and SCIM refuse it): ` +
            "it keeps the plugin's answer on the group's grants as its own, and is denied the names the group's rules match",
        );
  const groups = allGroups.filter((g) => !refused.groups.has(g.name)).map((g) => ({ name: g.name, members: g.members.filter((m) => !serviceAccounts.has(m)) }));
  const active = (g: PlanGrantee) => g.type === 'group' || !leftOut.has(g.name);

  const grants = pinRefusedGroupGrants(directGrants(state.grants.filter((g) => active(g.grantee)), notImported), allGroups, isRefused, membershipLeftOut, notes);
  const cands = candidatesOf(state.rules.filter((r) => active(r.grantee)), notImported);

  // The plugin decides a scorer with no grant of its own by its experiment's permission, which user and
  // group grants decide in the same order as the scorers' own patterns here: the same level on `<id>/*`.
  const experimentGrants = grants.filter((g) => g.kind === 'experiment');
  const scorerRuleHolders = new Set(cands.filter((c) => c.kind === 'scorer' && c.permission !== 'MANAGE').map((c) => keyOf(c.grantee)));
  const groupsOfUser = (user: string) => allGroups.filter((g) => g.members.includes(user)).map((g) => g.name);
  for (const g of experimentGrants) {
    const c: Candidate = { grantee: g.grantee, kind: 'scorer', glob: `${g.id}/*`, region: `${g.id}/*`, permission: g.permission, priority: 0, label: `scorers of experiment ${g.id} (its ${g.permission}, as the plugin falls back to it)` };
    // The plugin asks the groups' scorer rules before the user's experiment grant; flowgate would ask this pattern first.
    const blocking = g.grantee.type === 'user' ? groupsOfUser(g.grantee.name).find((name) => scorerRuleHolders.has(keyOf({ type: 'group', name }))) : undefined;
    if (blocking !== undefined) c.dropped = `group ${blocking}'s scorer rules decide before the experiment's grant in the plugin`;
    cands.push(c);
  }
  if (experimentGrants.length > 0)
    notes.push("scorers without a grant of their own: the plugin gives the experiment's permission, so each experiment grant's holder gets it on `<experiment_id>/*` scorers");
  if (cands.some((c) => c.kind === 'experiment'))
    notes.push("a scorer whose experiment only a regex rule decides gets flowgate's default permission (the experiment's name is not known to the import)");

  const memberSets = new Map(allGroups.map((g) => [g.name, new Set(g.members)]));
  const sharesMember = (a: string, b: string) => [...(memberSets.get(a) ?? [])].some((m) => memberSets.get(b)?.has(m) === true);
  const patterns = denyRefusedGroupPatterns(settlePatterns(cands, sharesMember, notImported, notes), memberSets, isRefused, membershipLeftOut, notes);

  if (o.mlflowDefault !== o.flowgateDefault)
    notes.push(
      `the plugin's DEFAULT_MLFLOW_PERMISSION was taken as ${o.mlflowDefault}, flowgate's FLOWGATE_DEFAULT_PERMISSION is ${o.flowgateDefault}: ` +
        "resources no grant or pattern decides are decided by flowgate's",
    );
  return { source: `mlflow-oidc-auth (${state.generation})`, users, groups, grants, patterns, notImported, notes };
}
