import type { AuditLog } from '../audit/audit-log.js';
import type { Sql } from '../store/sql.js';
import type { Directory } from './directory.js';
import { userJson, type Group, type User } from './types.js';

/**
 * The one writer of users, groups and memberships: the admin API, sign-in provisioning and the
 * bootstrap admin change principals only here, each change in one transaction with its audit
 * entry. Callers validate first and tell the caches afterwards (they know how many changes a
 * request makes).
 */
export function createPrincipalWriter(deps: { readonly sql: Sql; readonly directory: Directory; readonly audit: AuditLog }) {
  const { sql, directory, audit } = deps;

  return {
    async createUser(actor: string, fields: Parameters<Directory['createUser']>[0], audited: unknown = undefined): Promise<User> {
      return sql.transaction(async () => {
        const user = await directory.createUser(fields);
        await audit.record({ actor, action: 'user.create', target: `user:${user.username}`, newValue: audited ?? userJson(user) });
        return user;
      });
    },

    async updateUser(actor: string, user: User, displayName: string, isAdmin: boolean): Promise<User> {
      return sql.transaction(async () => {
        await directory.updateUser(user.id, displayName, isAdmin);
        const after = (await directory.userById(user.id))!;
        await audit.record({ actor, action: 'user.update', target: `user:${user.username}`, oldValue: userJson(user), newValue: userJson(after) });
        return after;
      });
    },

    async deleteUser(actor: string, user: User): Promise<void> {
      await sql.transaction(async () => {
        await directory.deleteUser(user.id);
        await audit.record({ actor, action: 'user.delete', target: `user:${user.username}`, oldValue: userJson(user) });
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
