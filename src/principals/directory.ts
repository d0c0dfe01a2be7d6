import type { Sql, SqlValue } from '../store/sql.js';
import type { DisabledBy, Group, Origin, SignIn, User } from './types.js';

interface UserRow {
  id: number;
  username: string;
  display_name: string;
  is_admin: number;
  is_service_account: number;
  created_at: number;
  sign_in: SignIn;
  oidc_issuer: string | null;
  oidc_subject: string | null;
  origin: Origin;
  external_id: string | null;
  disabled_at: number | null;
  disabled_by: string | null;
}
interface GroupRow {
  id: number;
  name: string;
  created_at: number;
  origin: Origin;
  external_id: string | null;
}

const toUser = (r: UserRow): User => ({
  id: r.id,
  username: r.username,
  displayName: r.display_name,
  isAdmin: r.is_admin === 1,
  isServiceAccount: r.is_service_account === 1,
  createdAt: r.created_at,
  signIn: r.sign_in,
  oidcIssuer: r.oidc_issuer,
  oidcSubject: r.oidc_subject,
  origin: r.origin,
  externalId: r.external_id,
  // PostgreSQL's BIGINT arrives as a string.
  disabledAt: r.disabled_at === null ? null : Number(r.disabled_at),
  // Only 'scim' is SCIM's to undo: anything else disabled (an older flowgate's row) is an administrator's.
  disabledBy: r.disabled_at === null ? null : r.disabled_by === 'scim' ? 'scim' : 'admin',
});
const toGroup = (r: GroupRow): Group => ({ id: r.id, name: r.name, createdAt: r.created_at, origin: r.origin, externalId: r.external_id });

export interface NewUser {
  username: string;
  displayName: string;
  isAdmin: boolean;
  isServiceAccount: boolean;
  /** `local` when absent. */
  signIn?: SignIn;
  /** The identity-provider account a sign-in creates the user for. */
  oidc?: OidcIdentity;
  /** `oidc` when `oidc` is given, else `local`, when absent. */
  origin?: Origin;
  externalId?: string | null;
}

export interface OidcIdentity {
  readonly issuer: string;
  readonly subject: string;
}

/**
 * A user by name in any case (SCIM's `userName eq`), through the index on lower(username) (migration 18).
 * Names are ASCII (usernameSchema), so lower() folds alike in SQLite and PostgreSQL.
 */
export const USERS_BY_NAME_IGNORING_CASE = 'SELECT * FROM users WHERE lower(username) = lower(CAST(? AS TEXT)) ORDER BY username';

/**
 * Held (inside a transaction) by whatever makes a user name new, SCIM's create and rename and a first
 * sign-in's or bearer token's create, after which each looks for the name in any case: two replicas
 * cannot both find it free and make `alice` and `Alice`. (The name is older than sign-in's use of it.)
 */
const USER_NAMES_LOCK = 'flowgate-scim-user-names';

const SQL = {
  userByName: 'SELECT * FROM users WHERE username = ?',
  usersByNameIgnoringCase: USERS_BY_NAME_IGNORING_CASE,
  userById: 'SELECT * FROM users WHERE id = ?',
  listUsers: 'SELECT * FROM users WHERE is_service_account = ? ORDER BY username',
  listAllUsers: 'SELECT * FROM users ORDER BY username',
  userBySubject: 'SELECT * FROM users WHERE oidc_issuer = ? AND oidc_subject = ?',
  insertUser: `INSERT INTO users (username, display_name, is_admin, is_service_account, created_at, sign_in, oidc_issuer, oidc_subject, origin, external_id)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
  userByExternalId: 'SELECT * FROM users WHERE external_id = ?',
  setExternalId: 'UPDATE users SET external_id = ? WHERE id = ?',
  renameUser: 'UPDATE users SET username = ? WHERE id = ?',
  // Only a change writes: an UPDATE moves the policy generation, which every flowgate on the store follows.
  // The conditions are what SCIM may not undo, decided in the one statement that writes: SCIM's disable
  // leaves an administrator's as it is, an administrator's takes over SCIM's (keeping when), and SCIM's
  // enable reaches only a user SCIM disabled (an older flowgate's row, disabled_by NULL, is an administrator's).
  disableByScim: "UPDATE users SET disabled_at = ?, disabled_by = 'scim' WHERE id = ? AND disabled_at IS NULL",
  disableByAdmin: "UPDATE users SET disabled_at = COALESCE(disabled_at, ?), disabled_by = 'admin' WHERE id = ? AND (disabled_at IS NULL OR disabled_by = 'scim')",
  enableByScim: "UPDATE users SET disabled_at = NULL, disabled_by = NULL WHERE id = ? AND disabled_at IS NOT NULL AND disabled_by = 'scim'",
  enableByAdmin: 'UPDATE users SET disabled_at = NULL, disabled_by = NULL WHERE id = ? AND disabled_at IS NOT NULL',
  groupById: 'SELECT * FROM groups WHERE id = ?',
  groupByExternalId: 'SELECT * FROM groups WHERE external_id = ?',
  listGroupsOf: 'SELECT * FROM groups WHERE origin = ? ORDER BY name',
  insertGroupFrom: 'INSERT INTO groups (name, created_at, origin, external_id) VALUES (?, ?, ?, ?) RETURNING *',
  updateGroup: 'UPDATE groups SET name = ?, external_id = ? WHERE id = ?',
  updateUser: 'UPDATE users SET display_name = ?, is_admin = ? WHERE id = ?',
  // Only a user still awaiting their first sign-in is bound: of two sign-ins racing, one binds.
  bindSubject: "UPDATE users SET oidc_issuer = ?, oidc_subject = ? WHERE id = ? AND sign_in = 'oidc' AND oidc_subject IS NULL",
  setSignIn: 'UPDATE users SET sign_in = ?, oidc_issuer = NULL, oidc_subject = NULL WHERE id = ?',
  makeBootstrapAdmin: "UPDATE users SET is_admin = 1, is_service_account = 0, sign_in = 'local', oidc_issuer = NULL, oidc_subject = NULL, disabled_at = NULL, disabled_by = NULL WHERE id = ?",
  deleteUser: 'DELETE FROM users WHERE id = ?',
  groupByName: 'SELECT * FROM groups WHERE name = ?',
  listGroups: 'SELECT * FROM groups ORDER BY name',
  insertGroup: 'INSERT INTO groups (name, created_at) VALUES (?, ?) RETURNING *',
  deleteGroup: 'DELETE FROM groups WHERE id = ?',
  groupsOfUser: 'SELECT g.* FROM groups g JOIN group_members m ON m.group_id = g.id WHERE m.user_id = ? ORDER BY g.name',
  groupIdsOfUser: 'SELECT group_id FROM group_members WHERE user_id = ?',
  membersOfGroup: 'SELECT u.* FROM users u JOIN group_members m ON m.user_id = u.id WHERE m.group_id = ? ORDER BY u.username',
  addMember: 'INSERT INTO group_members (group_id, user_id) VALUES (?, ?) ON CONFLICT DO NOTHING',
  removeMember: 'DELETE FROM group_members WHERE group_id = ? AND user_id = ?',
  // SCIM's groups are the identity provider's: memberships set from claims leave them alone.
  removeClaimedMemberships: "DELETE FROM group_members WHERE user_id = ? AND group_id NOT IN (SELECT id FROM groups WHERE origin = 'scim')",
  searchUsers: `SELECT * FROM users WHERE is_service_account IN (?, ?)
         AND (instr(lower(username), lower(CAST(? AS TEXT))) > 0 OR instr(lower(display_name), lower(CAST(? AS TEXT))) > 0)
       ORDER BY username LIMIT ? OFFSET ?`,
  searchGroups: `SELECT g.*, (SELECT count(*) FROM group_members m WHERE m.group_id = g.id) AS members
         FROM groups g WHERE instr(lower(g.name), lower(CAST(? AS TEXT))) > 0 ORDER BY g.name LIMIT ? OFFSET ?`,
  counts: `SELECT (SELECT count(*) FROM users) AS users, (SELECT count(*) FROM groups) AS groups,
              (SELECT count(*) FROM group_members) AS memberships`,
} as const;

/** Users, groups and memberships: the queries of the tables this module owns. */
export function createDirectory(sql: Sql, now: () => number = Date.now) {
  const user = async (text: string, params: readonly SqlValue[]): Promise<User | undefined> => {
    const r = await sql.get<UserRow>(text, params);
    return r && toUser(r);
  };
  const users = async (text: string, params: readonly SqlValue[] = []): Promise<User[]> => (await sql.all<UserRow>(text, params)).map(toUser);

  return {
    userByName: (username: string): Promise<User | undefined> => user(SQL.userByName, [username]),
    /** Every user whose name differs from `username` at most in case (SCIM's userName is caseExact=false). */
    usersByNameIgnoringCase: (username: string): Promise<User[]> => users(SQL.usersByNameIgnoringCase, [username]),
    /** Inside a transaction: no other new user name until it ends (see USER_NAMES_LOCK). */
    lockUserNames: (): Promise<void> => sql.lock(USER_NAMES_LOCK),
    userById: (id: number): Promise<User | undefined> => user(SQL.userById, [id]),
    userBySubject: (who: OidcIdentity): Promise<User | undefined> => user(SQL.userBySubject, [who.issuer, who.subject]),
    listUsers: (serviceAccounts?: boolean): Promise<User[]> =>
      serviceAccounts === undefined ? users(SQL.listAllUsers) : users(SQL.listUsers, [serviceAccounts ? 1 : 0]),
    createUser: async (u: NewUser): Promise<User> =>
      (await user(SQL.insertUser, [
        u.username,
        u.displayName,
        u.isAdmin ? 1 : 0,
        u.isServiceAccount ? 1 : 0,
        now(),
        u.oidc ? 'oidc' : (u.signIn ?? 'local'),
        u.oidc?.issuer ?? null,
        u.oidc?.subject ?? null,
        u.origin ?? (u.oidc ? 'oidc' : 'local'),
        u.externalId ?? null,
      ]))!,
    userByExternalId: (externalId: string): Promise<User | undefined> => user(SQL.userByExternalId, [externalId]),
    setExternalId: async (id: number, externalId: string | null): Promise<void> => {
      await sql.run(SQL.setExternalId, [externalId, id]);
    },
    renameUser: async (id: number, username: string): Promise<void> => {
      await sql.run(SQL.renameUser, [username, id]);
    },
    /**
     * Disables or enables the user on `by`'s behalf; false when nothing changed: it already was so, or
     * SCIM asked to enable a user an administrator disabled. An administrator's disable of a user SCIM
     * disabled changes who did it (true), so SCIM's enable no longer reaches them.
     */
    setDisabled: async (id: number, disabled: boolean, by: DisabledBy): Promise<boolean> => {
      const changed = disabled
        ? await sql.run(by === 'scim' ? SQL.disableByScim : SQL.disableByAdmin, [now(), id])
        : await sql.run(by === 'scim' ? SQL.enableByScim : SQL.enableByAdmin, [id]);
      return changed > 0;
    },
    updateUser: async (id: number, displayName: string, isAdmin: boolean): Promise<void> => {
      await sql.run(SQL.updateUser, [displayName, isAdmin ? 1 : 0, id]);
    },
    /** False when the user was not awaiting a first OIDC sign-in (nothing written). */
    bindSubject: async (id: number, who: OidcIdentity): Promise<boolean> => (await sql.run(SQL.bindSubject, [who.issuer, who.subject, id])) > 0,
    /** A change of sign-in always drops the binding: an OIDC user made anew awaits a first sign-in. */
    setSignIn: async (id: number, signIn: SignIn): Promise<void> => {
      await sql.run(SQL.setSignIn, [signIn, id]);
    },
    /** What configuration says the bootstrap admin is: an administrator, a person, reached by no sign-in. */
    makeBootstrapAdmin: async (id: number): Promise<void> => {
      await sql.run(SQL.makeBootstrapAdmin, [id]);
    },
    deleteUser: async (id: number): Promise<void> => {
      await sql.run(SQL.deleteUser, [id]);
    },
    groupByName: async (name: string): Promise<Group | undefined> => {
      const r = await sql.get<GroupRow>(SQL.groupByName, [name]);
      return r && toGroup(r);
    },
    listGroups: async (): Promise<Group[]> => (await sql.all<GroupRow>(SQL.listGroups)).map(toGroup),
    groupById: async (id: number): Promise<Group | undefined> => {
      const r = await sql.get<GroupRow>(SQL.groupById, [id]);
      return r && toGroup(r);
    },
    groupByExternalId: async (externalId: string): Promise<Group | undefined> => {
      const r = await sql.get<GroupRow>(SQL.groupByExternalId, [externalId]);
      return r && toGroup(r);
    },
    groupsFrom: async (origin: Origin): Promise<Group[]> => (await sql.all<GroupRow>(SQL.listGroupsOf, [origin])).map(toGroup),
    createGroupFrom: async (name: string, origin: Origin, externalId: string | null): Promise<Group> =>
      toGroup((await sql.get<GroupRow>(SQL.insertGroupFrom, [name, now(), origin, externalId]))!),
    updateGroup: async (id: number, name: string, externalId: string | null): Promise<void> => {
      await sql.run(SQL.updateGroup, [name, externalId, id]);
    },
    createGroup: async (name: string): Promise<Group> => toGroup((await sql.get<GroupRow>(SQL.insertGroup, [name, now()]))!),
    deleteGroup: async (id: number): Promise<void> => {
      await sql.run(SQL.deleteGroup, [id]);
    },
    groupsOfUser: async (userId: number): Promise<Group[]> => (await sql.all<GroupRow>(SQL.groupsOfUser, [userId])).map(toGroup),
    groupIdsOfUser: async (userId: number): Promise<number[]> =>
      (await sql.all<{ group_id: number }>(SQL.groupIdsOfUser, [userId])).map((r) => r.group_id),
    membersOfGroup: (groupId: number): Promise<User[]> => users(SQL.membersOfGroup, [groupId]),
    addMember: async (groupId: number, userId: number): Promise<boolean> => (await sql.run(SQL.addMember, [groupId, userId])) > 0,
    removeMember: async (groupId: number, userId: number): Promise<boolean> => (await sql.run(SQL.removeMember, [groupId, userId])) > 0,
    /** Makes the user's memberships of groups not from SCIM exactly `groupIds` (used at OIDC login); call inside a transaction. */
    setMemberships: async (userId: number, groupIds: readonly number[]): Promise<void> => {
      await sql.run(SQL.removeClaimedMemberships, [userId]);
      for (const g of groupIds) await sql.run(SQL.addMember, [g, userId]);
    },
    /** Users whose name or display name contains `text` (any case), a page at a time. */
    searchUsers: (kind: 'user' | 'service_account' | 'all', text: string, limit: number, offset: number): Promise<User[]> => {
      const [a, b] = kind === 'user' ? [0, 0] : kind === 'service_account' ? [1, 1] : [0, 1];
      return users(SQL.searchUsers, [a, b, text, text, limit, offset]);
    },
    /** Groups whose name contains `text` (any case), with their member counts, a page at a time. */
    searchGroups: async (text: string, limit: number, offset: number): Promise<Array<Group & { members: number }>> =>
      (await sql.all<GroupRow & { members: number }>(SQL.searchGroups, [text, limit, offset])).map((r) => ({ ...toGroup(r), members: r.members })),
    counts: async () => (await sql.get<{ users: number; groups: number; memberships: number }>(SQL.counts))!,
  };
}

export type Directory = ReturnType<typeof createDirectory>;
