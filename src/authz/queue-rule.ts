import { permits } from '../resources/permissions.js';
import type { Permission, QueueRule } from './types.js';

/**
 * MLflow's review-queue test on top of the experiment permission the route already demanded:
 * assigned users are stored lower-cased, so the caller's name is compared trimmed and lower-cased.
 * Pure, like decide().
 */
export function queueRuleAllows(rule: QueueRule, permission: Permission, assignedUsers: readonly string[], username: string): boolean {
  const assigned = assignedUsers.includes(username.trim().toLowerCase());
  switch (rule) {
    case 'member':
      return assigned;
    case 'member_or_manage':
      return assigned || permits(permission, 'manage');
  }
}
