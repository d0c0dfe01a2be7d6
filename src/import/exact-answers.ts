import { rank, strongest, type Permission } from '../resources/permissions.js';
import type { ResourceKind } from '../authz/types.js';
import type { PlanGrant, PlanPattern } from './plan.js';

/** `*`: the one pattern both plugins' wildcard grants translate to exactly (every name of the kind). */
export const EVERY_NAME = '*';

/** What the plugin answers for one user on one kind: per id its grants decide, and for any other id. */
export interface SourceAnswers {
  readonly user: string;
  readonly kind: ResourceKind;
  /** Ids the user's grants (their own or their groups') name, with the plugin's permission on each. */
  readonly byId: ReadonlyMap<string, Permission>;
  /** The plugin's permission on an id no grant names, or undefined when its default applies. */
  readonly other: Permission | undefined;
}

/**
 * Makes flowgate answer as the plugin did where the translated grants alone would not. flowgate
 * ranks a user's own grant above their groups', and grants on a resource above patterns; basic-auth
 * folds a user's own and their roles' grants, exact and `*` alike, into the strongest (a DENY
 * anywhere denying). Where the two differ for a user, the plugin's answer becomes the user's own
 * grant (or own `*` pattern), which in flowgate outranks the rest: exact, never wider. Returns the
 * grants and patterns added, each with the note saying why.
 */
export function pinSourceAnswers(
  answers: readonly SourceAnswers[],
  grants: PlanGrant[],
  patterns: PlanPattern[],
  groupsOf: (user: string) => readonly string[],
): string[] {
  const notes: string[] = [];
  for (const a of answers) {
    const groups = groupsOf(a.user);
    const ownPattern = () => patterns.find((p) => p.grantee.type === 'user' && p.grantee.name === a.user && p.kind === a.kind && p.pattern === EVERY_NAME);
    const flowgateOther = (): Permission | undefined => {
      const own = ownPattern();
      if (own) return own.permission;
      return ofGroups(patterns.filter((p) => p.grantee.type === 'group' && groups.includes(p.grantee.name) && p.kind === a.kind && p.pattern === EVERY_NAME).map((p) => p.permission));
    };
    if (a.other !== undefined && flowgateOther() !== a.other) {
      const own = ownPattern();
      if (own) patterns.splice(patterns.indexOf(own), 1);
      patterns.push({ grantee: { type: 'user', name: a.user }, kind: a.kind, pattern: EVERY_NAME, permission: a.other });
      notes.push(`user ${a.user}: every ${a.kind} (pattern ${EVERY_NAME}) ${a.other} of their own, as the plugin combined their grants`);
    }
    for (const [id, want] of a.byId) {
      const direct = grants.find((g) => g.grantee.type === 'user' && g.grantee.name === a.user && g.kind === a.kind && g.id === id);
      const have =
        direct?.permission ??
        ofGroups(grants.filter((g) => g.grantee.type === 'group' && groups.includes(g.grantee.name) && g.kind === a.kind && g.id === id).map((g) => g.permission)) ??
        flowgateOther();
      if (have === want) continue;
      if (direct) grants.splice(grants.indexOf(direct), 1);
      grants.push({ grantee: { type: 'user', name: a.user }, kind: a.kind, id, permission: want });
      notes.push(`user ${a.user}: ${a.kind} ${id} ${want} of their own, as the plugin combined their grants`);
    }
  }
  return notes;
}

/** flowgate's rule for grants of a user's groups: NO_PERMISSIONS in any denies, else the strongest. */
function ofGroups(permissions: readonly Permission[]): Permission | undefined {
  if (permissions.length === 0) return undefined;
  return permissions.includes('NO_PERMISSIONS') ? 'NO_PERMISSIONS' : strongest(permissions);
}

/** basic-auth's fold of the grants matching one key: a DENY anywhere denies, else the strongest. */
export function foldStrongest(permissions: readonly Permission[], denied: boolean): Permission | undefined {
  if (denied) return 'NO_PERMISSIONS';
  if (permissions.length === 0) return undefined;
  return permissions.reduce((a, b) => (rank(b) > rank(a) ? b : a));
}
