import type { AuditLog } from '../audit/audit-log.js';
import type { Db } from '../store/database.js';
import type { Directory } from './directory.js';
import { userJson, type Group, type User } from './types.js';

/**
 * The one writer of users, groups and memberships: the admin API, sign-in provisioning and the
 * bootstrap admin change principals only here, each change in one transaction with its audit
 * entry. Callers validate first and tell the caches afterwards (they know how many changes a
 * request makes).
 */
export function createPrincipalWriter(deps: { readonly db: Db; readonly directory: Directory; readonly audit: AuditLog }) {
  const { db, directory, audit } = deps;

  return {
    createUser(actor: string, fields: Parameters<Directory['createUser']>[0], audited: unknown = undefined): User {
      return db.transaction(() => {
        const user = directory.createUser(fields);
        audit.record({ actor, action: 'user.create', target: `user:${user.username}`, newValue: audited ?? userJson(user) });
        return user;
      })();
    },

    updateUser(actor: string, user: User, displayName: string, isAdmin: boolean): User {
      return db.transaction(() => {
        directory.updateUser(user.id, displayName, isAdmin);
        const after = directory.userById(user.id)!;
        audit.record({ actor, action: 'user.update', target: `user:${user.username}`, oldValue: userJson(user), newValue: userJson(after) });
        return after;
      })();
    },

    deleteUser(actor: string, user: User): void {
      db.transaction(() => {
        directory.deleteUser(user.id);
        audit.record({ actor, action: 'user.delete', target: `user:${user.username}`, oldValue: userJson(user) });
      })();
    },

    createGroup(actor: string, name: string): Group {
      return db.transaction(() => {
        const group = directory.createGroup(name);
        audit.record({ actor, action: 'group.create', target: `group:${group.name}` });
        return group;
      })();
    },

    deleteGroup(actor: string, group: Group): void {
      db.transaction(() => {
        directory.deleteGroup(group.id);
        audit.record({ actor, action: 'group.delete', target: `group:${group.name}` });
      })();
    },

    /** False when the user already was a member (nothing written). */
    addMember(actor: string, group: Group, user: User): boolean {
      return db.transaction(() => {
        const changed = directory.addMember(group.id, user.id);
        if (changed) audit.record({ actor, action: 'group.member.add', target: `group:${group.name}`, newValue: { username: user.username } });
        return changed;
      })();
    },

    /** False when the user was not a member (nothing written). */
    removeMember(actor: string, group: Group, user: User): boolean {
      return db.transaction(() => {
        const changed = directory.removeMember(group.id, user.id);
        if (changed) audit.record({ actor, action: 'group.member.remove', target: `group:${group.name}`, oldValue: { username: user.username } });
        return changed;
      })();
    },

    /** The user's memberships become exactly `groups`; false when they already were. */
    setMemberships(actor: string, user: User, groups: readonly Group[]): boolean {
      return db.transaction(() => {
        const before = directory.groupsOfUser(user.id).map((g) => g.name);
        const names = groups.map((g) => g.name);
        if (before.length === names.length && before.every((g) => names.includes(g))) return false;
        directory.setMemberships(user.id, groups.map((g) => g.id));
        audit.record({
          actor,
          action: 'group.memberships',
          target: `user:${user.username}`,
          oldValue: { groups: before },
          newValue: { groups: directory.groupsOfUser(user.id).map((g) => g.name) },
        });
        return true;
      })();
    },
  };
}

export type PrincipalWriter = ReturnType<typeof createPrincipalWriter>;
