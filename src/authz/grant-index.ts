import type { ResourceKind } from './types.js';

/**
 * The grants of every resource, by kind and stored id: each a flat list of (grantee, rank) pairs,
 * the grantee a user id (> 0) or a negated group id (< 0).
 *
 * A map per kind keyed by the stored id as the store gave it, rather than one map keyed by a
 * `kind + id` string: a joined key costs a string per resource held and one more per look-up. A
 * list is grown while rows arrive and cut to its length by `seal()`, since a grown array keeps
 * room for more (most resources hold a few grants).
 */
export class GrantIndex {
  private readonly byKind = new Map<ResourceKind, Map<string, number[]>>();
  private count = 0;

  get(kind: ResourceKind, stored: string): readonly number[] | undefined {
    return this.byKind.get(kind)?.get(stored);
  }

  /** Adds one grant to the resource's list (made on its first grant). */
  add(kind: ResourceKind, stored: string, grantee: number, rank: number): void {
    let ofKind = this.byKind.get(kind);
    if (!ofKind) this.byKind.set(kind, (ofKind = new Map()));
    let list = ofKind.get(stored);
    if (!list) {
      ofKind.set(stored, (list = []));
      this.count++;
    }
    list.push(grantee, rank);
  }

  /** The resource's list becomes `list` (another index's, sealed), or goes when there is none. */
  replace(kind: ResourceKind, stored: string, list: readonly number[] | undefined): void {
    const ofKind = this.byKind.get(kind);
    const had = ofKind?.has(stored) === true;
    if (list === undefined) {
      if (had) {
        ofKind!.delete(stored);
        this.count--;
      }
      return;
    }
    if (ofKind) ofKind.set(stored, list as number[]);
    else this.byKind.set(kind, new Map([[stored, list as number[]]]));
    if (!had) this.count++;
  }

  /** Cuts every list to its length; call once all rows are in. */
  seal(): this {
    for (const ofKind of this.byKind.values()) for (const [stored, list] of ofKind) ofKind.set(stored, list.slice());
    return this;
  }

  /** How many resources hold at least one grant. */
  get size(): number {
    return this.count;
  }
}
