import { seg, type AdminClient } from './admin-cli/client.js';
import { deleteGrant, grantPath } from './admin-cli/grants.js';
import { kindShape } from './admin-cli/resources.js';
import { idIsName, KINDS } from '../resources/kinds.js';
import { grantResource, type PolicyDocument, type PolicyGrant, type PolicyPatternGrant } from './policy-document.js';
import { clientIn, grantKey, patternKey, type ExperimentsIn } from './policy-state.js';

/** One change, shown as a diff line (`+` add, `~` change, `-` remove) and applied through the admin API. */
export interface Change {
  readonly line: string;
  apply(client: AdminClient): Promise<unknown>;
}

/**
 * The client acting in the workspace a grant or pattern grant names: without `in_workspace`, the
 * default one, whatever workspace the connection names (`--workspace`, MLFLOW_WORKSPACE).
 */
const clientFor = (client: AdminClient, w: { readonly in_workspace?: string | undefined }) => clientIn(client, w.in_workspace);

/** `create` (no grant yet), `update` (one with another permission) or `remove`. */
function grantChange(line: string, g: PolicyGrant, experimentsIn: ExperimentsIn, how: 'create' | 'update' | 'remove'): Change {
  return {
    line,
    async apply(given) {
      const client = clientFor(given, g);
      const { kind, name } = grantResource(g);
      // A kind whose id is not its name is an experiment's: its id comes from MLflow, in the grant's workspace (the default one untagged).
      const id = idIsName(kind) ? name : await experimentsIn(g.in_workspace).idOf(name);
      if (id === undefined) throw new Error(`MLflow has no ${KINDS[kind].ui.one} named '${name}'`);
      const grantee = g.user !== undefined ? ({ segment: 'users', name: g.user } as const) : ({ segment: 'groups', name: g.group! } as const);
      if (how === 'remove') return deleteGrant(client, grantee, kindShape(kind), id);
      return client.call(how === 'create' ? 'POST' : 'PATCH', grantPath(grantee, kindShape(kind), id), { permission: g.permission });
    },
  };
}

/** Set (create or change: one call does both) or remove one pattern grant. */
function patternChange(line: string, p: PolicyPatternGrant, how: 'create' | 'update' | 'remove'): Change {
  const path = p.user !== undefined ? `permissions/users/${seg(p.user)}/patterns` : `permissions/groups/${seg(p.group!)}/patterns`;
  return {
    line,
    apply: (given) => {
      const c = clientFor(given, p);
      return how !== 'remove'
        ? c.call('POST', path, { resource_type: p.resource_type, pattern: p.pattern, permission: p.permission })
        : c.call('DELETE', `${path}?${new URLSearchParams({ resource_type: p.resource_type, pattern: p.pattern })}`);
    },
  };
}

/**
 * The changes to one kind of grant (`noun`), matched by `keyOf`: `+` for one `current` lacks, `~` for
 * one with another permission there, and in `removals` (made only when pruning) `-` for one `wanted` lacks.
 */
function permissionChanges<T extends { readonly permission: string }>(
  noun: string,
  current: readonly T[],
  wanted: readonly T[],
  keyOf: (t: T) => string,
  change: (line: string, t: T, how: 'create' | 'update' | 'remove') => Change,
  prune: boolean,
  prunable: (t: T) => boolean = () => true,
): { changes: Change[]; removals: Change[] } {
  const byKey = new Map(current.map((t) => [keyOf(t), t]));
  const wantedKeys = new Set<string>();
  const changes: Change[] = [];
  for (const t of wanted) {
    const key = keyOf(t);
    wantedKeys.add(key);
    const now = byKey.get(key);
    if (!now) changes.push(change(`+ ${noun} ${key} ${t.permission}`, t, 'create'));
    else if (now.permission !== t.permission) changes.push(change(`~ ${noun} ${key} ${now.permission} → ${t.permission}`, t, 'update'));
  }
  const gone = prune ? current.filter((t) => !wantedKeys.has(keyOf(t)) && prunable(t)) : [];
  return { changes, removals: gone.map((t) => change(`- ${noun} ${keyOf(t)} ${t.permission}`, t, 'remove')) };
}

/**
 * The bootstrap admin (FLOWGATE_ADMIN_USERNAME): configuration owns it and the admin API refuses to
 * delete, demote or relink it, so a diff never asks (one refused call would fail the whole batch);
 * `kept` hears what the file asked for that stays as it is, and why.
 */
export interface BootstrapAdmin {
  readonly name: string | undefined;
  readonly kept?: (note: string) => void;
}

/**
 * The users flowgate holds that a token made (origin `kubernetes` or `bearer`; policy-state.ts), which
 * `current` leaves out, and their grants and pattern grants.
 */
export interface TokenUsers {
  readonly users: ReadonlySet<string>;
  readonly grants: readonly PolicyGrant[];
  readonly patterns: readonly PolicyPatternGrant[];
}

const NO_TOKEN_USERS: TokenUsers = { users: new Set(), grants: [], patterns: [] };

/**
 * The changes that turn `current` into `wanted`, in an order the API accepts (principals before
 * their grants, removals last). Without `prune`, nothing absent from `wanted` is removed. The
 * caller (`self`) is never removed, so an apply cannot lock its own author out; nor is the
 * bootstrap admin changed in who it is.
 *
 * A service account (of either document) and a user a token made are never made a member of a group:
 * a service account joins none (the admin API refuses it; a Kubernetes one is in its namespace's group
 * by its token). A user a token made (`tokens`) is neither made again nor changed by a file, and a
 * prune leaves it, its memberships and its grants alone; a file's grants to it are made as any.
 */
export function policyDiff(
  current: PolicyDocument,
  wanted: PolicyDocument,
  experiments: ExperimentsIn,
  prune: boolean,
  self: string,
  bootstrap: BootstrapAdmin = { name: undefined },
  tokens: TokenUsers = NO_TOKEN_USERS,
): Change[] {
  const changes: Change[] = [];
  const removals: Change[] = [];
  const keep = (note: string) => bootstrap.kept?.(`${note}: the bootstrap admin is owned by configuration (FLOWGATE_ADMIN_USERNAME)`);
  const tokenMade = (name: string) => {
    if (!tokens.users.has(name)) return false;
    bootstrap.kept?.(`user ${name} as its token made it: a policy file neither makes nor changes a user its issuer's token made (origin kubernetes or bearer)`);
    return true;
  };
  const noGroups = new Set([...current.service_accounts, ...wanted.service_accounts].map((s) => s.username));
  for (const name of tokens.users) noGroups.add(name);
  const currentUsers = new Map([...current.users, ...current.service_accounts.map((s) => ({ ...s, is_admin: false, sa: true }))].map((u) => [u.username, u]));
  // A grant names its grantee: pruning never removes a user or group the file still grants to.
  const wantedNames = new Set([...wanted.users, ...wanted.service_accounts].map((u) => u.username));
  for (const g of wanted.grants) if (g.user !== undefined) wantedNames.add(g.user);
  for (const p of wanted.patterns) if (p.user !== undefined) wantedNames.add(p.user);

  for (const u of wanted.users) {
    const now = currentUsers.get(u.username);
    if (!now) {
      if (tokenMade(u.username)) continue;
      changes.push({
        line: `+ user ${u.username}${u.is_admin ? ' (admin)' : ''}${u.sign_in !== undefined ? ` (sign-in ${u.sign_in})` : ''}`,
        apply: (c) =>
          c.call('POST', 'users/create', {
            username: u.username,
            display_name: u.display_name,
            is_admin: u.is_admin ?? false,
            // Absent, flowgate chooses (`oidc` for a person where OIDC is configured).
            ...(u.sign_in !== undefined ? { sign_in: u.sign_in } : {}),
          }),
      });
      continue;
    }
    const patch: Record<string, unknown> = {};
    if (u.display_name !== undefined && u.display_name !== now.display_name) patch.display_name = u.display_name;
    // Who the user is (administrator, how they sign in) is configuration's for the bootstrap admin.
    const owned = (field: string, is: unknown, asked: unknown) => {
      if (u.username !== bootstrap.name) return false;
      keep(`user ${u.username}: ${field} stays ${JSON.stringify(is)}, not ${JSON.stringify(asked)}`);
      return true;
    };
    if (u.is_admin !== undefined && u.is_admin !== now.is_admin && !owned('is_admin', now.is_admin, u.is_admin)) patch.is_admin = u.is_admin;
    const signInNow = 'sign_in' in now ? now.sign_in : undefined;
    if (u.sign_in !== undefined && signInNow !== undefined && u.sign_in !== signInNow && !owned('sign_in', signInNow, u.sign_in)) patch.sign_in = u.sign_in;
    if (Object.keys(patch).length > 0)
      changes.push({ line: `~ user ${u.username} ${JSON.stringify(patch)}`, apply: (c) => c.call('PATCH', `permissions/users/${seg(u.username)}`, patch) });
  }
  for (const s of wanted.service_accounts) {
    if (currentUsers.has(s.username) || tokenMade(s.username)) continue;
    changes.push({
      line: `+ service account ${s.username}`,
      apply: (c) => c.call('POST', 'users/create', { username: s.username, display_name: s.display_name, is_service_account: true }),
    });
  }

  const currentGroups = new Map(current.groups.map((g) => [g.name, new Set(g.members ?? [])]));
  for (const g of wanted.groups) {
    const now = currentGroups.get(g.name);
    if (!now) changes.push({ line: `+ group ${g.name}`, apply: (c) => c.call('POST', 'permissions/groups', { group_name: g.name }) });
    for (const m of g.members ?? []) {
      if (now?.has(m)) continue;
      if (noGroups.has(m)) {
        bootstrap.kept?.(`${m} out of group ${g.name}: a service account joins no group (a Kubernetes service account is in its namespace's group by its token, on each flowgate)`);
        continue;
      }
      changes.push({ line: `+ member ${m} of ${g.name}`, apply: (c) => c.call('POST', `permissions/groups/${seg(g.name)}/users`, { username: m }) });
    }
  }
  if (prune)
    for (const g of current.groups) {
      const keep = new Set(wanted.groups.find((w) => w.name === g.name)?.members ?? []);
      for (const m of g.members ?? [])
        if (!keep.has(m))
          removals.push({ line: `- member ${m} of ${g.name}`, apply: (c) => c.call('DELETE', `permissions/groups/${seg(g.name)}/users/${seg(m)}`) });
    }

  // A token's user's grants are compared with a file naming them, and never pruned (the document leaves them out).
  const prunable = (x: { readonly user?: string | undefined }) => x.user === undefined || !tokens.users.has(x.user);
  const grants = permissionChanges('grant', [...current.grants, ...tokens.grants], wanted.grants, grantKey, (line, g, how) => grantChange(line, g, experiments, how), prune, prunable);
  const patterns = permissionChanges('pattern', [...current.patterns, ...tokens.patterns], wanted.patterns, patternKey, patternChange, prune, prunable);
  changes.push(...grants.changes, ...patterns.changes);

  if (prune) {
    removals.push(...grants.removals, ...patterns.removals);
    const wantedGroups = new Set([
      ...wanted.groups.map((g) => g.name),
      ...wanted.grants.flatMap((g) => (g.group !== undefined ? [g.group] : [])),
      ...wanted.patterns.flatMap((p) => (p.group !== undefined ? [p.group] : [])),
    ]);
    for (const g of current.groups)
      if (!wantedGroups.has(g.name)) removals.push({ line: `- group ${g.name}`, apply: (c) => c.call('DELETE', `permissions/groups/${seg(g.name)}`) });
    for (const name of currentUsers.keys()) {
      if (wantedNames.has(name) || name === self) continue;
      if (name === bootstrap.name) keep(`user ${name}: not removed`);
      else removals.push({ line: `- user ${name}`, apply: (c) => c.call('DELETE', `permissions/users/${seg(name)}`) });
    }
  }
  return [...changes, ...removals];
}
