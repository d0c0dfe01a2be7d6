import { KINDS } from '../resources/kinds.js';
import { rank, type Permission } from '../resources/permissions.js';
import type { ResourceKind } from '../authz/types.js';
import type { BasicAuthRole, BasicAuthRule, BasicAuthState } from './basic-auth-read.js';
import { EVERY_NAME, foldStrongest, pinSourceAnswers, type SourceAnswers } from './exact-answers.js';
import { grantIdProblem } from './refusals.js';
import { NO_REFUSALS, type ImportPlan, type PlanGrant, type PlanGrantee, type PlanPattern, type PlanRefusals, type PlanUser } from './plan.js';

export interface BasicAuthPlanOptions {
  /** basic-auth's `default_permission` (its ini file; the database does not hold it). */
  readonly mlflowDefault: Permission;
  /** flowgate's FLOWGATE_DEFAULT_PERMISSION, to say when the two differ. */
  readonly flowgateDefault: Permission;
  /** Users and groups flowgate's store keeps out (refusals.ts): left out, each member answered exactly without the group. */
  readonly refused?: PlanRefusals;
}

const DEFAULT_WORKSPACE = 'default';

/** basic-auth's resource types flowgate has a kind for; a legacy model grant covered prompts of that name too. */
const KIND_OF: Readonly<Record<string, readonly ResourceKind[]>> = {
  experiment: ['experiment'],
  registered_model: ['registered_model'],
  prompt: ['prompt'],
  registered_model_or_prompt: ['registered_model', 'prompt'],
  scorer: ['scorer'],
  mcp_server: ['mcp_server'],
  gateway_secret: ['gateway_secret'],
  gateway_endpoint: ['gateway_endpoint'],
  gateway_model_definition: ['gateway_model_definition'],
};
const GATEWAY_TYPES = new Set(['gateway_secret', 'gateway_endpoint', 'gateway_model_definition']);

interface Translated {
  readonly kind: ResourceKind;
  /** An id, or undefined for `*`. */
  readonly id: string | undefined;
  readonly permission: Permission;
  /**
   * A DENY, which vetoes in basic-auth's fold; the legacy NO_PERMISSIONS (also flowgate's
   * NO_PERMISSIONS) is only the weakest level there, losing to any grant beside it.
   */
  readonly deny: boolean;
}

/** basic-auth's level as flowgate's for the kind: DENY (and the legacy NO_PERMISSIONS) deny; USE is READ where flowgate's kind has no USE. */
function levelFor(kind: ResourceKind, word: string): Permission | undefined {
  if (word === 'DENY' || word === 'NO_PERMISSIONS') return 'NO_PERMISSIONS';
  if (word === 'USE') return (KINDS[kind].permissions as readonly Permission[]).includes('USE') ? 'USE' : 'READ';
  if (word === 'READ' || word === 'EDIT' || word === 'MANAGE') return word;
  return undefined;
}

/** One rule as flowgate grants, or the reason it has no exact equivalent. */
function translate(rule: BasicAuthRule): Translated[] | string {
  const kinds = KIND_OF[rule.resourceType];
  if (rule.resourceType === 'workspace')
    return `${rule.permission} on the whole workspace (flowgate has no workspace-wide grant${rule.permission === 'MANAGE' ? '; the resource rights it gave are kept by grants of the users holding it' : ''})`;
  if (!kinds) return `${rule.permission} on every ${rule.resourceType} (flowgate has no separate ${rule.resourceType} permission: it decides them by their parent's)`;
  if (rule.pattern !== EVERY_NAME && GATEWAY_TYPES.has(rule.resourceType))
    return `${rule.permission} on ${rule.resourceType} ${rule.pattern} (basic-auth keys it by MLflow's generated id, flowgate by name: grant it by name)`;
  const out: Translated[] = [];
  for (const kind of kinds) {
    const permission = levelFor(kind, rule.permission);
    if (permission === undefined) return `${rule.permission} on ${rule.resourceType} ${rule.pattern} (not a level flowgate knows)`;
    // A scorer's pattern is `<experiment_id>/<url-encoded name>`; flowgate's scorer id has the name as it is.
    const id = rule.pattern === EVERY_NAME ? undefined : kind === 'scorer' ? scorerId(rule.pattern) : rule.pattern;
    // A pattern MLflow never writes (`01`, a key not percent-encoded) names no resource: nothing to carry over.
    const idProblem = id === undefined ? undefined : grantIdProblem(kind, id);
    if (idProblem !== undefined) return `${rule.permission} on ${rule.resourceType} ${JSON.stringify(rule.pattern)} (not an id flowgate takes: ${idProblem})`;
    out.push({ kind, id, permission, deny: rule.permission === 'DENY' });
  }
  return out;
}

/** The scorer id of MLflow's key, or `''` (no scorer's) when it has no `/` or is not percent-encoded as MLflow writes it. */
function scorerId(pattern: string): string {
  const slash = pattern.indexOf('/');
  if (slash < 0) return '';
  try {
    return `${pattern.slice(0, slash)}/${decodeURIComponent(pattern.slice(slash + 1))}`;
  } catch {
    return '';
  }
}

/** basic-auth (3.13+) lifts a positive grant to its default_permission; a denial stays. */
const floored = (p: Permission, floor: Permission | undefined) => (floor !== undefined && p !== 'NO_PERMISSIONS' && rank(floor) > rank(p) ? floor : p);

/**
 * The plan for a basic-auth database: users (admins, passwords), each role of the `default`
 * workspace as a group with its grants and members, each user's own grants as theirs, `*` as the
 * pattern `*`; then, user by user, flowgate made to answer what basic-auth answered.
 *
 * A refused user is left out with their own grants and memberships. A refused group (a role whose name
 * flowgate already has, or may not take) is left out with its grants and members, but its rules still
 * count in what basic-auth answered its members: the pinning below gives each of them that answer as
 * grants of their own, so leaving the group out neither widens nor narrows anyone. A user flowgate
 * holds as a service account is in no group (a service account joins none), and is pinned the same way.
 */
export function planBasicAuth(state: BasicAuthState, o: BasicAuthPlanOptions): ImportPlan {
  const refused = o.refused ?? NO_REFUSALS;
  const notImported = [...state.unread];
  const notes: string[] = [];
  for (const line of refused.users.values()) notImported.push(`${line} (left out, with their grants and memberships)`);
  const imported = state.users.filter((u) => !refused.users.has(u.username));
  const usernames = new Map(state.users.map((u) => [u.id, u.username]));
  const users: PlanUser[] = imported.map((u) => ({
    username: u.username,
    isAdmin: u.isAdmin,
    isServiceAccount: false,
    ...(u.passwordHash ? { passwordHash: u.passwordHash } : {}),
  }));
  const roleById = new Map(state.roles.map((r) => [r.id, r]));
  // flowgate's service accounts of the source's names join no group: what a role gave them is pinned as their own below.
  const serviceAccounts = refused.serviceAccounts ?? new Set<string>();
  const assigned = (role: BasicAuthRole) =>
    [...state.assignments]
      .filter(([, ids]) => ids.includes(role.id))
      .map(([uid]) => usernames.get(uid))
      .filter((n): n is string => n !== undefined && !refused.users.has(n));
  const membersOf = (role: BasicAuthRole) => {
    const members = assigned(role);
    for (const n of members.filter((m) => serviceAccounts.has(m)))
      notImported.push(
        `membership of ${n} in group ${role.name}: flowgate's ${n} is a service account, which joins no group (the admin API and SCIM refuse it): ` +
          'what basic-auth answered them through the role comes over as grants of their own',
      );
    return members.filter((m) => !serviceAccounts.has(m));
  };
  // The roles generation lifts positive grants to the default; the per-user tables did not.
  const floor = state.generation === 'roles' ? o.mlflowDefault : undefined;

  const grants: PlanGrant[] = [];
  const patterns: PlanPattern[] = [];
  const groups: Array<{ name: string; members: string[] }> = [];
  /** Per role id: its rules as flowgate grants (or undefined, outside `default`). */
  const translatedOf = new Map<number, Translated[]>();
  const adminRoles = new Set<number>();

  for (const role of state.roles) {
    const owner = role.ownerUserId === undefined ? undefined : usernames.get(role.ownerUserId);
    if (owner !== undefined && refused.users.has(owner)) continue;
    const label = owner !== undefined ? `grants of user ${owner}` : `role ${role.name}`;
    if (role.workspace !== DEFAULT_WORKSPACE) {
      notImported.push(`workspace ${role.workspace}: ${label} (${role.rules.length} rules; flowgate imports the default workspace only)`);
      continue;
    }
    const grantee: PlanGrantee = owner !== undefined ? { type: 'user', name: owner } : { type: 'group', name: role.name };
    // A refused group's rules still decide what basic-auth answered its members; they are not written.
    const writes = grantee.type === 'user' || !refused.groups.has(role.name);
    if (grantee.type === 'group') {
      if (writes) groups.push({ name: role.name, members: membersOf(role) });
      else notImported.push(`${refused.groups.get(role.name)!} (left out, with its grants and members: each member gets what basic-auth answered them as grants of their own)`);
    }
    const translated: Translated[] = [];
    for (const rule of role.rules) {
      if (rule.resourceType === 'workspace' && rule.pattern === EVERY_NAME && rule.permission === 'MANAGE') adminRoles.add(role.id);
      const t = translate(rule);
      if (typeof t === 'string') {
        notImported.push(`${label}: ${t}`);
        continue;
      }
      for (const g of t) {
        const permission = floored(g.permission, floor);
        translated.push({ ...g, permission });
        if (!writes) continue;
        if (g.id === undefined) patterns.push({ grantee, kind: g.kind, pattern: EVERY_NAME, permission });
        else grants.push({ grantee, kind: g.kind, id: g.id, permission });
      }
    }
    translatedOf.set(role.id, translated);
  }

  // What basic-auth answered each user, kind by kind, from all their roles in `default` together.
  const answers: SourceAnswers[] = [];
  for (const u of imported) {
    // A service account is never made an administrator (apply-plan.ts): it gets what its roles gave.
    if (u.isAdmin && !serviceAccounts.has(u.username)) continue;
    const roleIds = (state.assignments.get(u.id) ?? []).filter((id) => translatedOf.has(id));
    // A user's own role is theirs even when no assignment row says so (the per-user tables had none).
    for (const r of state.roles) if (r.ownerUserId === u.id && translatedOf.has(r.id) && !roleIds.includes(r.id)) roleIds.push(r.id);
    const rules = roleIds.flatMap((id) => translatedOf.get(id)!);
    const workspaceAdmin = roleIds.some((id) => adminRoles.has(id));
    const kinds = new Set<ResourceKind>(rules.map((r) => r.kind));
    if (workspaceAdmin) for (const k of new Set(Object.values(KIND_OF).flat())) kinds.add(k);
    for (const kind of kinds) {
      const mine = rules.filter((r) => r.kind === kind);
      const fold = (matching: Translated[]) =>
        workspaceAdmin ? 'MANAGE' : foldStrongest(matching.filter((r) => !r.deny).map((r) => r.permission), matching.some((r) => r.deny));
      const stars = mine.filter((r) => r.id === undefined);
      const byId = new Map<string, Permission>();
      for (const id of new Set(mine.flatMap((r) => (r.id === undefined ? [] : [r.id])))) byId.set(id, fold(mine.filter((r) => r.id === id || r.id === undefined))!);
      answers.push({ user: u.username, kind, byId, other: stars.length > 0 || workspaceAdmin ? fold(stars) : undefined });
    }
  }
  const groupsOf = (user: string) => groups.filter((g) => g.members.includes(user)).map((g) => g.name);
  notes.push(...pinSourceAnswers(answers, grants, patterns, groupsOf));
  if (o.mlflowDefault !== o.flowgateDefault)
    notes.push(
      `basic-auth's default_permission was taken as ${o.mlflowDefault}, flowgate's FLOWGATE_DEFAULT_PERMISSION is ${o.flowgateDefault}: ` +
        'resources no grant names are decided by flowgate\'s',
    );
  return {
    source: `mlflow-basic-auth (${state.generation}${state.revision ? `, revision ${state.revision}` : ''})`,
    users,
    groups,
    grants,
    patterns,
    notImported,
    notes,
  };
}
