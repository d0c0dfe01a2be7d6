import type { AdminClient } from './admin-cli/client.js';
import { seg } from './admin-cli/client.js';
import { findExperiment } from './admin-cli/mlflow-lookups.js';
import { KINDS as GRANT_KINDS } from './admin-cli/resources.js';
import { idIsName, idOfGrantJson, KINDS } from '../resources/kinds.js';
import { grantResource, type PolicyDocument, type PolicyGrant, type PolicyPatternGrant } from './policy-document.js';

interface ApiUser {
  username: string;
  display_name: string;
  is_admin: boolean;
  is_service_account: boolean;
  sign_in: 'local' | 'oidc';
  /** The bootstrap admin (FLOWGATE_ADMIN_USERNAME), which the admin API never demotes, deletes or relinks. */
  bootstrap?: boolean;
}

export interface PolicyState {
  readonly document: PolicyDocument;
  /** Grants on experiments MLflow no longer has, left out of the document. */
  readonly skipped: string[];
  /** The bootstrap admin's name, when flowgate has one: configuration owns it, so no diff plans to change who it is. */
  readonly bootstrapAdmin: string | undefined;
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
export const grantKey = (g: PolicyGrant) => {
  const { field, name } = grantResource(g);
  return `${field}:${name} ${g.user !== undefined ? `user:${g.user}` : `group:${g.group}`}`;
};

export const patternKey = (p: PolicyPatternGrant) => `${p.resource_type}:${p.pattern} ${p.user !== undefined ? `user:${p.user}` : `group:${p.group}`}`;

interface ApiPattern {
  resource_type: PolicyPatternGrant['resource_type'];
  pattern: string;
  username?: string;
  group_name?: string;
  permission: PolicyPatternGrant['permission'];
}

/** What the running flowgate holds now, as a policy document (sorted, so exports diff cleanly). */
export async function readPolicyState(client: AdminClient, experiments: ExperimentNames): Promise<PolicyState> {
  const { users } = await client.call<{ users: ApiUser[] }>('GET', 'permissions/users');
  const { groups } = await client.call<{ groups: { name: string }[] }>('GET', 'permissions/groups');
  const skipped: string[] = [];
  const grants: PolicyGrant[] = [];
  const grantees = [
    ...users.map((u) => ({ segment: 'users', name: u.username, field: 'user' as const })),
    ...groups.map((g) => ({ segment: 'groups', name: g.name, field: 'group' as const })),
  ];
  for (const who of grantees) {
    for (const k of GRANT_KINDS) {
      const { permissions } = await client.call<{ permissions: Record<string, string>[] }>('GET', `permissions/${who.segment}/${seg(who.name)}/${k.segment}`);
      for (const p of permissions) {
        let resource = idOfGrantJson(k.kind, p);
        // A kind whose id is not its name is an experiment's: the file names it by its name.
        if (!idIsName(k.kind)) {
          const name = await experiments.nameOf(resource);
          if (name === undefined) {
            skipped.push(`${KINDS[k.kind].ui.one} ${resource} (${who.field} ${who.name})`);
            continue;
          }
          resource = name;
        }
        grants.push({ [KINDS[k.kind].policyField]: resource, [who.field]: who.name, permission: p.permission } as PolicyGrant);
      }
    }
  }
  const members: Record<string, string[]> = {};
  for (const g of groups) {
    const { users: m } = await client.call<{ users: ApiUser[] }>('GET', `permissions/groups/${seg(g.name)}/users`);
    members[g.name] = m.map((u) => u.username).sort();
  }
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
    grants: grants.sort(byKey(grantKey)),
    patterns: (await client.call<{ patterns: ApiPattern[] }>('GET', 'permissions/patterns')).patterns
      .map(
        (p): PolicyPatternGrant => ({
          resource_type: p.resource_type,
          pattern: p.pattern,
          ...(p.username !== undefined ? { user: p.username } : { group: p.group_name! }),
          permission: p.permission,
        }),
      )
      .sort(byKey(patternKey)),
  };
  return { document, skipped, bootstrapAdmin: users.find((u) => u.bootstrap === true)?.username };
}
