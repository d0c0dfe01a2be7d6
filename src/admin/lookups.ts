import { notFound } from '../errors.js';
import type { Group, User } from '../principals/types.js';
import type { AdminDeps } from './types.js';

export async function requireUser(deps: AdminDeps, username: string): Promise<User> {
  const user = await deps.directory.userByName(username);
  if (!user) throw notFound(`User '${username}' does not exist`);
  return user;
}

export async function requireGroup(deps: AdminDeps, name: string): Promise<Group> {
  const group = await deps.directory.groupByName(name);
  if (!group) throw notFound(`Group '${name}' does not exist`);
  return group;
}

/** The names of a user's groups, in name order. */
export async function groupNamesOf(deps: AdminDeps, user: User): Promise<string[]> {
  return (await deps.directory.groupsOfUser(user.id)).map((g) => g.name);
}
