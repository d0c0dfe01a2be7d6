import type { AuditLog } from '../audit/audit-log.js';
import { badRequest } from '../errors.js';
import type { Sql } from '../store/sql.js';
import type { Directory, OidcIdentity } from './directory.js';
import { userJson, type Group, type SignIn, type User } from './types.js';

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
        await audit.record({ actor, action: 'user.sign-in', target: `user:${user.username}`, oldValue: userJson(user), newValue: { sign_in: signIn } });
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
     * Makes the configured bootstrap admin what configuration says (an administrator, a person, no
     * sign-in) when the store says otherwise; audited with what it was. False when nothing was wrong.
     */
    async repairBootstrapAdmin(actor: string, user: User): Promise<boolean> {
      if (user.isAdmin && !user.isServiceAccount && user.signIn === 'local' && user.oidcSubject === null) return false;
      return sql.transaction(async () => {
        await directory.makeBootstrapAdmin(user.id);
        const after = (await directory.userById(user.id))!;
        await audit.record({ actor, action: 'user.repair', target: `user:${user.username}`, oldValue: userJson(user), newValue: userJson(after) });
        return true;
      });
    },

    async createGroup(actor: string, name: string): Promise<Group> {
      return sql.transaction(async () => {
        const group = await directory.createGroup(name);
        await audit.record({ actor, action: 'group.create', target: `group:${group.name}` });
        return group;
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

    /** The user's memberships become exactly `groups`; false when they already were. */
    async setMemberships(actor: string, user: User, groups: readonly Group[]): Promise<boolean> {
      return sql.transaction(async () => {
        const before = (await directory.groupsOfUser(user.id)).map((g) => g.name);
        const names = groups.map((g) => g.name);
        if (before.length === names.length && before.every((g) => names.includes(g))) return false;
        await directory.setMemberships(user.id, groups.map((g) => g.id));
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
