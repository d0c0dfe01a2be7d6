/**
 * The permissions a grant gives, in their one order: each granting level includes the ones before it
 * (READ < USE < EDIT < MANAGE), and NO_PERMISSIONS grants nothing (a direct one, or one in any group,
 * denies). USE is MLflow's level for spending a gateway resource (invoking an endpoint, building on a
 * secret or model definition) without changing it; only the kinds that have it take it.
 */
export const GRANTING = ['READ', 'USE', 'EDIT', 'MANAGE'] as const;

/** Every permission, as listed in messages, forms and the store's CHECK constraint. */
export const PERMISSIONS = [...GRANTING, 'NO_PERMISSIONS'] as const;

export type Permission = (typeof PERMISSIONS)[number];

/** The levels of a kind MLflow gives no USE (experiments, models, prompts, Skills). */
export const PERMISSIONS_WITHOUT_USE = PERMISSIONS.filter((p) => p !== 'USE');

/** The permissions by strength, weakest first: an index into it is the permission's rank. */
export const BY_RANK: readonly Permission[] = ['NO_PERMISSIONS', ...GRANTING];

const RANK = Object.fromEntries(BY_RANK.map((p, i) => [p, i])) as Readonly<Record<Permission, number>>;

export function rank(p: Permission): number {
  return RANK[p];
}

export function isPermission(word: string): word is Permission {
  return (PERMISSIONS as readonly string[]).includes(word);
}

/** The strongest of some permissions (NO_PERMISSIONS for none). */
export function strongest(permissions: Iterable<Permission>): Permission {
  let best: Permission = 'NO_PERMISSIONS';
  for (const p of permissions) if (rank(p) > rank(best)) best = p;
  return best;
}

/** What a route may need of a resource, and the permission each need takes. */
const NEEDED = { read: 'READ', use: 'USE', edit: 'EDIT', manage: 'MANAGE' } as const satisfies Record<string, (typeof GRANTING)[number]>;

export type ResourceNeed = keyof typeof NEEDED;

export const RESOURCE_NEEDS = Object.keys(NEEDED) as readonly ResourceNeed[];

/** Whether a need is decided on resources (the other needs are about the route or the caller). */
export function isResourceNeed(need: string): need is ResourceNeed {
  return (RESOURCE_NEEDS as readonly string[]).includes(need);
}

export function permits(permission: Permission, need: ResourceNeed): boolean {
  return rank(permission) >= rank(NEEDED[need]);
}
