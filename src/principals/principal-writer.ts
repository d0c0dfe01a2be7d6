import type { AuditLog } from '../audit/audit-log.js';
import { badRequest } from '../errors.js';
import type { Sql } from '../store/sql.js';
import type { Directory, OidcIdentity } from './directory.js';
import { userJson, type DisabledBy, type Group, type Origin, type SignIn, type User } from './types.js';

/**
 * The one writer of users, groups and memberships: the admin API, sign-in provisioning and the
 * bootstrap admin change principals only here, each change in one transaction with its audit
 * entry. Callers validate first and tell the caches afterwards (they know how many changes a
 * request makes).
 *
 * The bootstrap admin (`bootstrapAdmin`, FLOWGATE_ADMIN_USERNAME) belongs to configuration: no
 * change made here may demote, delete or relink it, whichever route or batch asks, so the operator
 * cannot be locked out by another administrator.
 */
export function createPrincipalWriter(deps: {
  readonly sql: Sql;
  readonly directory: Directory;
  readonly audit: AuditLog;
  readonly bootstrapAdmin?: string | undefined;
  /** Told of each group made (after its transaction): the workspace rules give it its role. */
  readonly onGroupCreated?: (group: Group) => Promise<void>;
  /** Inside the transaction linking a user to the identity provider: a password imported from MLflow basic-auth would let HTTP Basic past it. */
  readonly retireImportedPassword?: (userId: number) => Promise<boolean>;
}) {
  const { sql, directory, audit } = deps;
  const isBootstrapAdmin = (user: User): boolean => deps.bootstrapAdmin !== undefined && user.username === deps.bootstrapAdmin;
  const refuseForBootstrapAdmin = (user: User, what: string): void => {
    if (isBootstrapAdmin(user))
      throw badRequest(
        `'${user.username}' is the bootstrap administrator (FLOWGATE_ADMIN_USERNAME): configuration owns it, so it cannot ${what}. ` +
          'Change FLOWGATE_ADMIN_USERNAME and restart flowgate first.',
      );
  };

  return {
    /** Whether configuration owns this user (FLOWGATE_ADMIN_USERNAME): the changes below refuse to demote, delete or relink it. */
    isBootstrapAdmin,

    async createUser(actor: string, fields: Parameters<Directory['createUser']>[0], audited: unknown = undefined): Promise<User> {
      return sql.transaction(async () => {
        const user = await directory.createUser(fields);
        await audit.record({ actor, action: 'user.create', target: `user:${user.username}`, newValue: audited ?? userJson(user) });
        return user;
      });
    },

    async updateUser(actor: string, user: User, displayName: string, isAdmin: boolean): Promise<User> {
      if (!isAdmin) refuseForBootstrapAdmin(user, 'lose its admin rights');
      return sql.transaction(async () => {
        await directory.updateUser(user.id, displayName, isAdmin);
        const after = (await directory.userById(user.id))!;
        await audit.record({ actor, action: 'user.update', target: `user:${user.username}`, oldValue: userJson(user), newValue: userJson(after) });
        return after;
      });
    },

    async deleteUser(actor: string, user: User): Promise<void> {
      refuseForBootstrapAdmin(user, 'be deleted');
      await sql.transaction(async () => {
        await directory.deleteUser(user.id);
        await audit.record({ actor, action: 'user.delete', target: `user:${user.username}`, oldValue: userJson(user) });
      });
    },

    /**
     * How the user signs in: `oidc` links them to the identity-provider account of their next sign-in
     * (an administrator's explicit act), `local` unlinks them. False when it already was so.
     */
    async setSignIn(actor: string, user: User, signIn: SignIn): Promise<boolean> {
      if (user.signIn === signIn) return false;
      refuseForBootstrapAdmin(user, 'be reached by a sign-in');
      if (user.isServiceAccount) throw badRequest(`'${user.username}' is a service account: service accounts never sign in`);
      return sql.transaction(async () => {
        await directory.setSignIn(user.id, signIn);
        const password = signIn === 'oidc' && ((await deps.retireImportedPassword?.(user.id)) ?? false);
        await audit.record({
          actor,
          action: 'user.sign-in',
          target: `user:${user.username}`,
          oldValue: { ...userJson(user), ...(password ? { imported_password: true } : {}) },
          newValue: { sign_in: signIn },
        });
        return true;
      });
    },

    /** Binds a user awaiting their first OIDC sign-in to the account signing in; false when another sign-in bound it first. */
    async bindSubject(actor: string, user: User, who: OidcIdentity): Promise<boolean> {
      return sql.transaction(async () => {
        if (!(await directory.bindSubject(user.id, who))) return false;
        await audit.record({ actor, action: 'user.bind', target: `user:${user.username}`, newValue: { issuer: who.issuer, subject: who.subject } });
        return true;
      });
    },

    /**
     * Makes the configured bootstrap admin what configuration says (an enabled administrator, a person,
     * no sign-in) when the store says otherwise; audited with what it was. False when nothing was wrong.
     */
    async repairBootstrapAdmin(actor: string, user: User): Promise<boolean> {
      if (user.isAdmin && !user.isServiceAccount && user.signIn === 'local' && user.oidcSubject === null && user.disabledAt === null) return false;
      return sql.transaction(async () => {
        await directory.makeBootstrapAdmin(user.id);
        const after = (await directory.userById(user.id))!;
        await audit.record({ actor, action: 'user.repair', target: `user:${user.username}`, oldValue: userJson(user), newValue: userJson(after) });
        return true;
      });
    },

    async createGroup(actor: string, name: string, origin: Origin = 'local', externalId: string | null = null): Promise<Group> {
      const made = await sql.transaction(async () => {
        const group = await directory.createGroupFrom(name, origin, externalId);
        await audit.record({ actor, action: 'group.create', target: `group:${group.name}`, ...(origin !== 'local' ? { newValue: { origin } } : {}) });
        return group;
      });
      await deps.onGroupCreated?.(made);
      return made;
    },

    /** A new name or external id (SCIM); false when both already were so. */
    async updateGroup(actor: string, group: Group, name: string, externalId: string | null): Promise<boolean> {
      if (group.name === name && group.externalId === externalId) return false;
      return sql.transaction(async () => {
        await directory.updateGroup(group.id, name, externalId);
        await audit.record({ actor, action: 'group.update', target: `group:${group.name}`, oldValue: { name: group.name }, newValue: { name, external_id: externalId } });
        return true;
      });
    },

    /**
     * A new user name (SCIM `userName`): grants, tokens and memberships stay, being held by id; the
     * caller forgets the user's cached credentials (Basic names the user). A name taken is a 409.
     */
    async renameUser(actor: string, user: User, username: string): Promise<boolean> {
      if (user.username === username) return false;
      refuseForBootstrapAdmin(user, 'be renamed');
      if (deps.bootstrapAdmin === username) throw badRequest(`'${username}' is the bootstrap administrator's name (FLOWGATE_ADMIN_USERNAME)`);
      return sql.transaction(async () => {
        await directory.renameUser(user.id, username);
        await audit.record({ actor, action: 'user.rename', target: `user:${user.username}`, oldValue: { username: user.username }, newValue: { username } });
        return true;
      });
    },

    /** The identity provider's id for the user (SCIM `externalId`); false when it already was so. */
    async setExternalId(actor: string, user: User, externalId: string | null): Promise<boolean> {
      if (user.externalId === externalId) return false;
      refuseForBootstrapAdmin(user, 'be changed by the identity provider');
      return sql.transaction(async () => {
        await directory.setExternalId(user.id, externalId);
        await audit.record({ actor, action: 'user.update', target: `user:${user.username}`, newValue: { external_id: externalId } });
        return true;
      });
    },

    /**
     * Disables (no credential of theirs works, no sign-in reaches them) or enables the user on behalf
     * of `by`, which the store keeps: SCIM (`scim`) disables and enables only what it disabled, an
     * administrator (`admin`) either (docs/machine-identity.md#scim). False when nothing changed (it
     * already was so, or SCIM asked to enable a user an administrator disabled). The caller ends their
     * tokens and sessions (src/principals/user-switch.ts).
     */
    async setDisabled(actor: string, user: User, disabled: boolean, by: DisabledBy): Promise<boolean> {
      if (disabled) refuseForBootstrapAdmin(user, 'be disabled');
      return sql.transaction(async () => {
        const changed = await directory.setDisabled(user.id, disabled, by);
        if (changed)
          await audit.record({
            actor,
            action: disabled ? 'user.disable' : 'user.enable',
            target: `user:${user.username}`,
            ...(disabled ? { newValue: { disabled_by: by } } : {}),
          });
        return changed;
      });
    },

    async deleteGroup(actor: string, group: Group): Promise<void> {
      await sql.transaction(async () => {
        await directory.deleteGroup(group.id);
        await audit.record({ actor, action: 'group.delete', target: `group:${group.name}` });
      });
    },

    /** False when the user already was a member (nothing written). */
    async addMember(actor: string, group: Group, user: User): Promise<boolean> {
      return sql.transaction(async () => {
        const changed = await directory.addMember(group.id, user.id);
        if (changed) await audit.record({ actor, action: 'group.member.add', target: `group:${group.name}`, newValue: { username: user.username } });
        return changed;
      });
    },

    /** False when the user was not a member (nothing written). */
    async removeMember(actor: string, group: Group, user: User): Promise<boolean> {
      return sql.transaction(async () => {
        const changed = await directory.removeMember(group.id, user.id);
        if (changed) await audit.record({ actor, action: 'group.member.remove', target: `group:${group.name}`, oldValue: { username: user.username } });
        return changed;
      });
    },

    /**
     * The user's memberships become exactly `groups` (a sign-in's claims); false when they already
     * were. SCIM's groups are the identity provider's to fill: a claim neither joins nor leaves them.
     */
    async setMemberships(actor: string, user: User, groups: readonly Group[]): Promise<boolean> {
      const claimed = groups.filter((g) => g.origin !== 'scim');
      return sql.transaction(async () => {
        const before = (await directory.groupsOfUser(user.id)).filter((g) => g.origin !== 'scim').map((g) => g.name);
        const names = claimed.map((g) => g.name);
        if (before.length === names.length && before.every((g) => names.includes(g))) return false;
        await directory.setMemberships(user.id, claimed.map((g) => g.id));
        await audit.record({
          actor,
          action: 'group.memberships',
          target: `user:${user.username}`,
          oldValue: { groups: before },
          newValue: { groups: (await directory.groupsOfUser(user.id)).map((g) => g.name) },
        });
        return true;
      });
    },
  };
}

export type PrincipalWriter = ReturnType<typeof createPrincipalWriter>;
