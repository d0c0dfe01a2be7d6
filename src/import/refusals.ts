import { groupNameSchema, heldIdSchema, usernameSchema } from '../admin/validation.js';
import type { ResourceKind } from '../authz/types.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ClusterNames } from '../bearer/cluster-names.js';
import type { Directory } from '../principals/directory.js';
import type { Group, Origin } from '../principals/types.js';
import type { ImportPlan, PlanRefusals } from './plan.js';

/** What of flowgate's store decides which of the source's names an import may use. */
export interface StoreNames {
  readonly users: readonly string[];
  /** The users that are service accounts: a source user of one of these names joins no group. */
  readonly serviceAccounts: readonly string[];
  /**
   * Every group's name; for a group the source names exactly, its members and whether an earlier run
   * of this import made it (`madeByImport`: the import's own group, which a later run fills again).
   */
  readonly groups: ReadonlyArray<{ readonly name: string; readonly origin: Origin; readonly members?: readonly string[]; readonly madeByImport?: boolean }>;
}

export interface RefusalOptions {
  /** `--merge-existing`: a group flowgate already has takes the source's members and grants. */
  readonly mergeExisting: boolean;
  /** FLOWGATE_ADMIN_USERNAME: no source user may hold it in another case either. */
  readonly bootstrapAdmin?: string | undefined;
  /** The names only a kubernetes issuer makes (clusterNamesOf(config.bearer)): no source user or group takes one. */
  readonly clusterNames?: ClusterNames;
}

/** The names an import (whose audit actor is `actor`) plans to use, as the store holds them now. */
export async function storeNamesFor(plan: Pick<ImportPlan, 'groups'>, s: { readonly directory: Directory; readonly audit: AuditLog }, actor: string): Promise<StoreNames> {
  const named = new Set(plan.groups.map((g) => g.name));
  const groups = [];
  for (const g of await s.directory.listGroups())
    groups.push({
      name: g.name,
      origin: g.origin,
      ...(named.has(g.name) ? { members: (await s.directory.membersOfGroup(g.id)).map((m) => m.username), madeByImport: await madeBy(s.audit, g, actor) } : {}),
    });
  const users = await s.directory.listUsers();
  return { users: users.map((u) => u.username), serviceAccounts: users.filter((u) => u.isServiceAccount).map((u) => u.username), groups };
}

/**
 * Whether `actor` (an import) made the group as it is now: the last `group.create` of its name is
 * that actor's, and it is a local group (SCIM's and sign-ins' groups are theirs; only SCIM renames
 * a group, and only its own).
 */
export async function madeBy(audit: AuditLog, group: Group, actor: string): Promise<boolean> {
  if (group.origin !== 'local') return false;
  const target = `group:${group.name}`;
  const PAGE = 200;
  for (let before = Number.MAX_SAFE_INTEGER; ; ) {
    const page = await audit.search({ actor: '', action: 'group.create', target }, PAGE, before);
    const last = page.find((e) => e.target === target);
    if (last !== undefined) return last.actor === actor;
    if (page.length < PAGE) return false;
    before = page[page.length - 1]!.id;
  }
}

const problemOf = (schema: typeof usernameSchema | typeof groupNameSchema, name: string): string | undefined => {
  const r = schema.safeParse(name);
  return r.success ? undefined : (r.error.issues[0]?.message ?? 'not a valid name');
};

/** Why flowgate would not take `name` as a user's name (the admin API's rule); undefined when it would. */
export const usernameProblem = (name: string) => problemOf(usernameSchema, name);
/** Why flowgate would not take `name` as a group's name (the admin API's rule); undefined when it would. */
export const groupNameProblem = (name: string) => problemOf(groupNameSchema, name);

/**
 * Why flowgate would not keep a grant on `id` of the kind (the admin API's rule for a grant's id:
 * plain-decimal experiment ids, `<experiment_id>/<name>` scorers, names without control characters);
 * undefined when it would. A source row on such an id names nothing MLflow holds, so leaving it out
 * narrows no one; kept, it could be read as more than one resource (an experiment `*` would give its
 * holder the scorer pattern of every scorer, as mlflow-oidc-auth's scorer fallback comes over).
 */
export function grantIdProblem(kind: ResourceKind, id: string): string | undefined {
  const r = heldIdSchema(kind).safeParse(id);
  return r.success ? undefined : (r.error.issues[0]?.message ?? 'not a valid id');
}

const quoted = (names: readonly string[]) => names.map((n) => `'${n}'`).join(', ');

/**
 * The source's users and groups the import leaves out, each with the line saying why:
 * - a name the admin API would refuse (usernameSchema, groupNameSchema: a user name is ASCII);
 * - a name only a kubernetes issuer makes (its `username_template`, its `namespace_group`; any case),
 *   even where flowgate holds it: the source's user would squat the service account's name before its
 *   first call (or hand the source's grants to the real one), its group would carry a namespace's
 *   grants and workspace to the source's members. A sign-in and another issuer's token are refused it too;
 * - a name flowgate (or the source itself) holds in another case: SCIM matches names ignoring case
 *   and sign-in refuses a second case, so `Alice` beside `alice` would be an account what manages
 *   `alice` misses;
 * - a group flowgate already has (made by SCIM, a sign-in's claims or an administrator), unless
 *   `mergeExisting`: its members would gain the source's grants, and the source's members its own.
 *   A group an earlier run of this import made is its own, and is not refused.
 * An existing user of the same name is the same person: they are not refused here (the apply never
 * promotes a service account nor gives a password to one, or to someone who signs in through OIDC).
 * Those whose namesake is a service account are returned as `serviceAccounts`: the plan puts them in
 * no group.
 */
export function refusalsFor(plan: Pick<ImportPlan, 'users' | 'groups'>, store: StoreNames, o: RefusalOptions): PlanRefusals {
  const users = new Map<string, string>();
  const groups = new Map<string, string>();

  const storeUsers = new Set(store.users);
  const storeUsersByCase = byLowerCase(store.users);
  const sourceUsersByCase = byLowerCase(plan.users.map((u) => u.username));
  for (const { username } of plan.users) {
    const problem = usernameProblem(username);
    if (problem !== undefined) {
      users.set(username, `user ${JSON.stringify(username)}: not a user name flowgate takes (${problem})`);
      continue;
    }
    if (o.clusterNames?.isUser(username) === true) {
      users.set(username, `user ${username}: has the shape of a Kubernetes service account's name, which only the kubernetes issuer makes (FLOWGATE_BEARER_ISSUERS)`);
      continue;
    }
    if (storeUsers.has(username)) continue;
    const lower = username.toLowerCase();
    if (o.bootstrapAdmin !== undefined && o.bootstrapAdmin !== username && o.bootstrapAdmin.toLowerCase() === lower)
      users.set(username, `user ${username}: the bootstrap administrator's name (FLOWGATE_ADMIN_USERNAME) in another case`);
    else if (storeUsersByCase.has(lower))
      users.set(username, `user ${username}: flowgate has user ${quoted(storeUsersByCase.get(lower)!)}, the same name in another case (SCIM and sign-in match names ignoring case)`);
    else if (sourceUsersByCase.get(lower)!.length > 1)
      users.set(username, `user ${username}: the source also has ${quoted(sourceUsersByCase.get(lower)!.filter((n) => n !== username))}, the same name in another case (flowgate keeps one user per name in any case)`);
  }

  const storeGroups = new Map(store.groups.map((g) => [g.name, g]));
  const storeGroupsByCase = byLowerCase(store.groups.map((g) => g.name));
  const sourceGroupsByCase = byLowerCase(plan.groups.map((g) => g.name));
  for (const g of plan.groups) {
    const problem = groupNameProblem(g.name);
    if (problem !== undefined) {
      groups.set(g.name, `group ${JSON.stringify(g.name)}: not a group name flowgate takes (${problem})`);
      continue;
    }
    if (o.clusterNames?.isGroup(g.name) === true) {
      groups.set(g.name, `group ${g.name}: has the shape of a Kubernetes namespace's group, which only the kubernetes issuer makes (FLOWGATE_BEARER_ISSUERS)`);
      continue;
    }
    const existing = storeGroups.get(g.name);
    if (existing !== undefined) {
      if (o.mergeExisting || existing.madeByImport === true) continue;
      const outside = (existing.members ?? []).filter((m) => !g.members.includes(m)).length;
      groups.set(
        g.name,
        `group ${g.name}: flowgate already has this group (origin ${existing.origin}, ${outside} members not in source): merging would give its members the source's grants ` +
          "and the source's members its grants; --merge-existing merges it",
      );
      continue;
    }
    const lower = g.name.toLowerCase();
    if (storeGroupsByCase.has(lower)) groups.set(g.name, `group ${g.name}: flowgate has group ${quoted(storeGroupsByCase.get(lower)!)}, the same name in another case`);
    else if (sourceGroupsByCase.get(lower)!.length > 1)
      groups.set(g.name, `group ${g.name}: the source also has ${quoted(sourceGroupsByCase.get(lower)!.filter((n) => n !== g.name))}, the same name in another case`);
  }
  const serviceAccounts = new Set(store.serviceAccounts);
  return { users, groups, serviceAccounts: new Set(plan.users.map((u) => u.username).filter((n) => serviceAccounts.has(n))) };
}

function byLowerCase(names: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const n of names) {
    const k = n.toLowerCase();
    out.set(k, [...(out.get(k) ?? []), n]);
  }
  return out;
}
