import { notFound } from '../errors.js';
import type { Group, User } from '../principals/types.js';
import type { AdminDeps } from './types.js';

export function requireUser(deps: AdminDeps, username: string): User {
  const user = deps.directory.userByName(username);
  if (!user) throw notFound(`User '${username}' does not exist`);
  return user;
}

export function requireGroup(deps: AdminDeps, name: string): Group {
  const group = deps.directory.groupByName(name);
  if (!group) throw notFound(`Group '${name}' does not exist`);
  return group;
}
