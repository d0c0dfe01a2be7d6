import type { GrantFacts } from './decide.js';
import type { GrantsRepo } from './grants-repo.js';
import type { Permission, ResourceKind, ResourceRef } from './types.js';

/** Who the facts are for: the caller and the groups they belong to (from the principal cache). */
export interface Grantee {
  readonly userId: number;
  readonly groupIds: readonly number[];
}

const PERMISSIONS: readonly Permission[] = ['NO_PERMISSIONS', 'READ', 'EDIT', 'MANAGE'];
const CODE: Record<Permission, number> = { NO_PERMISSIONS: 0, READ: 1, EDIT: 2, MANAGE: 3 };
const NO_FACTS: GrantFacts = Object.freeze({ direct: undefined, groups: Object.freeze([]) as readonly Permission[] });

const keyOf = (kind: ResourceKind, id: string) => `${kind}\u0000${id}`;

/**
 * Every grant, in memory, indexed by resource: a decision is one map look-up and a scan of that
 * resource's few grants — no SQL on any request, cold or warm. Each entry is a flat list of
 * (grantee, permission) pairs, the grantee a user id (> 0) or a negated group id (< 0).
 *
 * Changes reach it through `changed(ref)` (that resource is re-read) or `reloadAll()` (after
 * deleting users or groups, whose ids SQLite may hand out again). The index is empty until the first
 * `reloadAll()` resolves.
 */
export function createPolicyReader(grants: GrantsRepo) {
  let index = new Map<string, number[]>();

  function load(rows: Iterable<{ resource_kind: ResourceKind; resource_id: string; user_id: number | null; group_id: number | null; permission: Permission }>) {
    const next = new Map<string, number[]>();
    for (const r of rows) {
      const key = keyOf(r.resource_kind, r.resource_id);
      let list = next.get(key);
      if (!list) next.set(key, (list = []));
      list.push(r.user_id !== null ? r.user_id : -(r.group_id as number), CODE[r.permission]);
    }
    return next;
  }

  /** Resources re-read while a full reload was in flight: its older snapshot must not undo them. */
  let changedDuringReload: Map<string, number[] | undefined> | undefined;

  async function reloadAll(): Promise<void> {
    const mine = new Map<string, number[] | undefined>();
    changedDuringReload = mine;
    try {
      const next = load(await grants.all());
      for (const [key, fresh] of mine) {
        if (fresh) next.set(key, fresh);
        else next.delete(key);
      }
      index = next;
    } finally {
      if (changedDuringReload === mine) changedDuringReload = undefined;
    }
  }

  return {
    factsFor(who: Grantee, ref: ResourceRef): GrantFacts {
      const list = index.get(keyOf(ref.kind, ref.id));
      if (list === undefined) return NO_FACTS;
      let direct: Permission | undefined;
      let groups: Permission[] | undefined;
      for (let i = 0; i < list.length; i += 2) {
        const grantee = list[i]!;
        if (grantee === who.userId) direct = PERMISSIONS[list[i + 1]!];
        else if (grantee < 0 && who.groupIds.includes(-grantee)) (groups ??= []).push(PERMISSIONS[list[i + 1]!]!);
      }
      return { direct, groups: groups ?? NO_FACTS.groups };
    },
    /** The grants of these resources changed: re-read just them. */
    async changed(...refs: readonly ResourceRef[]): Promise<void> {
      const rows = await Promise.all(refs.map((ref) => grants.onResourceRaw(ref.kind, ref.id)));
      refs.forEach((ref, i) => {
        const key = keyOf(ref.kind, ref.id);
        const fresh = load(rows[i]!).get(key);
        changedDuringReload?.set(key, fresh);
        if (fresh) index.set(key, fresh);
        else index.delete(key);
      });
    },
    reloadAll,
    get resources(): number {
      return index.size;
    },
  };
}

export type PolicyReader = ReturnType<typeof createPolicyReader>;
