import type { AdminClient } from './admin-cli/client.js';
import { seg } from './admin-cli/client.js';
import { findExperiment } from './admin-cli/mlflow-lookups.js';
import { KINDS as GRANT_KINDS } from './admin-cli/resources.js';
import { idIsName, idOfGrantJson, keyedInWorkspace, KINDS } from '../resources/kinds.js';
import { DEFAULT_WORKSPACE } from '../workspaces/names.js';
import { grantResource, type PolicyDocument, type PolicyGrant, type PolicyPatternGrant } from './policy-document.js';

interface ApiUser {
  username: string;
  display_name: string;
  is_admin: boolean;
  is_service_account: boolean;
  sign_in: 'local' | 'oidc';
  /** Where the user came from: `kubernetes` and `bearer` users are made by their issuer's token. */
  origin?: string;
  /** The bootstrap admin (FLOWGATE_ADMIN_USERNAME), which the admin API never demotes, deletes or relinks. */
  bootstrap?: boolean;
}

/**
 * Users a token made (origin `kubernetes`: a service account of a cluster; `bearer`: an issuer's
 * account): each flowgate makes them, and puts them in their groups, at their first call. A policy
 * file names none of them: another flowgate would refuse the membership (a service account joins no
 * group) or make a local user squatting the name, locking the real one out.
 */
const madeByToken = (u: ApiUser) => u.origin === 'kubernetes' || u.origin === 'bearer';

export interface PolicyState {
  /** What `policy export` writes: users made by a token left out, with their memberships, grants and pattern grants. */
  readonly document: PolicyDocument;
  /** Grants on experiments MLflow no longer has, left out of the document. */
  readonly skipped: string[];
  /** The bootstrap admin's name, when flowgate has one: configuration owns it, so no diff plans to change who it is. */
  readonly bootstrapAdmin: string | undefined;
  /** The users a token made (madeByToken), whom the document leaves out. */
  readonly tokenUsers: ReadonlySet<string>;
  /** Their grants and pattern grants, which a diff compares a file naming them with (and never prunes). */
  readonly tokenGrants: { readonly grants: PolicyGrant[]; readonly patterns: PolicyPatternGrant[] };
}

/** Experiment ids and names, both ways, cached for one run. */
export class ExperimentNames {
  private readonly byId = new Map<string, string | undefined>();
  private readonly byName = new Map<string, string | undefined>();
  constructor(private readonly client: AdminClient) {}

  async nameOf(id: string): Promise<string | undefined> {
    if (!this.byId.has(id)) this.remember(id, (await findExperiment(this.client, id))?.name);
    return this.byId.get(id);
  }

  async idOf(name: string): Promise<string | undefined> {
    if (!this.byName.has(name)) {
      const found = await findExperiment(this.client, name);
      // A name made of digits would be read as an id by findExperiment.
      if (found && found.name === name) this.remember(found.id, name);
      else this.byName.set(name, undefined);
    }
    return this.byName.get(name);
  }

  private remember(id: string, name: string | undefined): void {
    this.byId.set(id, name);
    if (name !== undefined) this.byName.set(name, id);
  }
}

const byKey = <T>(key: (t: T) => string) => (a: T, b: T) => key(a).localeCompare(key(b));
/** A grant's or pattern grant's workspace, as its key starts (nothing for the default one). */
const inWorkspace = (w: { readonly in_workspace?: string | undefined }) => (w.in_workspace !== undefined ? `workspace:${w.in_workspace} ` : '');
export const grantKey = (g: PolicyGrant) => {
  const { field, name } = grantResource(g);
  return `${inWorkspace(g)}${field}:${name} ${g.user !== undefined ? `user:${g.user}` : `group:${g.group}`}`;
};

export const patternKey = (p: PolicyPatternGrant) => `${inWorkspace(p)}${p.resource_type}:${p.pattern} ${p.user !== undefined ? `user:${p.user}` : `group:${p.group}`}`;

/**
 * The client acting in the workspace a policy file's grant or pattern grant names: without
 * `in_workspace` (or with `default`), the default workspace's, whatever workspace the connection names
 * (`--workspace`, MLFLOW_WORKSPACE). A connection naming none acts in the default workspace itself.
 */
export function clientIn(client: AdminClient, workspace: string | undefined): AdminClient {
  const ws = workspace ?? DEFAULT_WORKSPACE;
  if (ws === (client.workspace ?? DEFAULT_WORKSPACE)) return client;
  return client.inWorkspace(ws);
}

/** A policy file's workspace as its grants carry it: undefined for the default one. */
export const fileWorkspace = (workspace: string | undefined): string | undefined => (workspace === DEFAULT_WORKSPACE ? undefined : workspace);

/** Experiment names per MLflow workspace (an experiment's name is unique only in its own); undefined: the default one. */
export type ExperimentsIn = (workspace: string | undefined) => ExperimentNames;

export function experimentsPerWorkspace(client: AdminClient): ExperimentsIn {
  const byWorkspace = new Map<string, ExperimentNames>();
  return (workspace) => {
    const key = fileWorkspace(workspace) ?? DEFAULT_WORKSPACE;
    let names = byWorkspace.get(key);
    if (!names) byWorkspace.set(key, (names = new ExperimentNames(clientIn(client, workspace))));
    return names;
  };
}

/**
 * The workspaces a state covers (undefined: the default one, its grants untagged). With the
 * connection naming one: that one, and every one in `named` (the workspaces a file being applied
 * names, the default one for its untagged grants), so each is compared with what that workspace
 * holds. Else, with MLflow's workspaces on, every one the caller sees (the default one first); a
 * workspace of `named` MLflow does not list holds nothing to compare with.
 */
async function workspacesOf(client: AdminClient, named: ReadonlyArray<string | undefined>): Promise<Array<string | undefined>> {
  if (client.workspace !== undefined) return [...new Set([client.workspace, ...named].map(fileWorkspace))];
  const all = await client.workspaces();
  return [undefined, ...all.filter((w) => w !== DEFAULT_WORKSPACE)];
}

interface ApiPattern {
  resource_type: PolicyPatternGrant['resource_type'];
  pattern: string;
  username?: string;
  group_name?: string;
  permission: PolicyPatternGrant['permission'];
}

/**
 * What the running flowgate holds now, as a policy document (sorted, so exports diff cleanly): in the
 * workspaces workspacesOf names, each read in its own workspace (`named`: a file's, when applying it).
 */
export async function readPolicyState(client: AdminClient, experimentsIn: ExperimentsIn, named: ReadonlyArray<string | undefined> = []): Promise<PolicyState> {
  const { users: all } = await client.call<{ users: ApiUser[] }>('GET', 'permissions/users');
  const { groups } = await client.call<{ groups: { name: string }[] }>('GET', 'permissions/groups');
  const tokenUsers = new Set(all.filter(madeByToken).map((u) => u.username));
  const users = all.filter((u) => !tokenUsers.has(u.username));
  const skipped: string[] = [];
  const grants: PolicyGrant[] = [];
  const grantees = [
    ...all.map((u) => ({ segment: 'users', name: u.username, field: 'user' as const })),
    ...groups.map((g) => ({ segment: 'groups', name: g.name, field: 'group' as const })),
  ];
  const workspaces = await workspacesOf(client, named);
  const patterns: PolicyPatternGrant[] = [];
  for (const [pass, workspace] of workspaces.entries()) {
    const here = clientIn(client, workspace);
    const tag = workspace === undefined ? {} : { in_workspace: workspace };
    const experiments = experimentsIn(workspace);
    for (const who of grantees) {
      for (const k of GRANT_KINDS) {
        // A workspace's own membership is in no workspace: read once.
        if (pass > 0 && !keyedInWorkspace(k.kind)) continue;
        const { permissions } = await here.call<{ permissions: Record<string, string>[] }>('GET', `permissions/${who.segment}/${seg(who.name)}/${k.segment}`);
        for (const p of permissions) {
          let resource = idOfGrantJson(k.kind, p);
          // A kind whose id is not its name is an experiment's: the file names it by its name.
          if (!idIsName(k.kind)) {
            const name = await experiments.nameOf(resource);
            if (name === undefined) {
              skipped.push(`${KINDS[k.kind].ui.one} ${resource} (${who.field} ${who.name}${workspace === undefined ? '' : `, workspace ${workspace}`})`);
              continue;
            }
            resource = name;
          }
          grants.push({ [KINDS[k.kind].policyField]: resource, ...(keyedInWorkspace(k.kind) ? tag : {}), [who.field]: who.name, permission: p.permission } as PolicyGrant);
        }
      }
    }
    for (const p of (await here.call<{ patterns: ApiPattern[] }>('GET', 'permissions/patterns')).patterns) {
      // A kind kept in no workspace (membership) is listed in each: read once.
      if (pass > 0 && !keyedInWorkspace(p.resource_type)) continue;
      patterns.push({
        resource_type: p.resource_type,
        pattern: p.pattern,
        ...(keyedInWorkspace(p.resource_type) ? tag : {}),
        ...(p.username !== undefined ? { user: p.username } : { group: p.group_name! }),
        permission: p.permission,
      });
    }
  }
  const members: Record<string, string[]> = {};
  for (const g of groups) {
    const { users: m } = await client.call<{ users: ApiUser[] }>('GET', `permissions/groups/${seg(g.name)}/users`);
    // A token's user is in its groups by its token (a namespace's, a claim's), on every flowgate.
    members[g.name] = m.map((u) => u.username).filter((n) => !tokenUsers.has(n)).sort();
  }
  const ofTokenUser = (x: { readonly user?: string | undefined }) => x.user !== undefined && tokenUsers.has(x.user);
  const document: PolicyDocument = {
    version: 1,
    users: users
      .filter((u) => !u.is_service_account)
      .map((u) => ({ username: u.username, display_name: u.display_name, is_admin: u.is_admin, sign_in: u.sign_in }))
      .sort(byKey((u) => u.username)),
    service_accounts: users
      .filter((u) => u.is_service_account)
      .map((u) => ({ username: u.username, display_name: u.display_name }))
      .sort(byKey((u) => u.username)),
    groups: groups.map((g) => ({ name: g.name, members: members[g.name]! })).sort(byKey((g) => g.name)),
    grants: grants.filter((g) => !ofTokenUser(g)).sort(byKey(grantKey)),
    patterns: patterns.filter((p) => !ofTokenUser(p)).sort(byKey(patternKey)),
  };
  return {
    document,
    skipped,
    bootstrapAdmin: users.find((u) => u.bootstrap === true)?.username,
    tokenUsers,
    tokenGrants: { grants: grants.filter(ofTokenUser), patterns: patterns.filter(ofTokenUser) },
  };
}
