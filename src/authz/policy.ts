import { hasNumericId, keyedInWorkspace, RESOURCE_KINDS } from '../resources/kinds.js';
import { splitQualified } from '../workspaces/names.js';
import { inWorkspace } from '../workspaces/request-workspace.js';
import { BY_RANK } from '../resources/permissions.js';
import type { GrantFacts } from './decide.js';
import { storedId, type GrantsRepo, type IndexedGrant } from './grants-repo.js';
import { GrantIndex } from './grant-index.js';
import { createPatternPolicy } from './pattern-policy.js';
import type { PatternGrant } from './pattern-index.js';
import type { Permission, ResourceKind, ResourceRef } from './types.js';

/** Who the facts are for: the caller and the groups they belong to (from the principal cache). */
export interface Grantee {
  readonly userId: number;
  readonly groupIds: readonly number[];
}

const NO_FACTS: GrantFacts = Object.freeze({ direct: undefined, groups: Object.freeze([]) as readonly Permission[] });

/**
 * Past this many resources in one change, one full reload is cheaper than a re-read each: every
 * re-read is its own statement, and tens of thousands of them hold the pool from every request.
 */
export const FULL_RELOAD_ABOVE = 1000;

/** A resource's key among the re-reads in flight: its kind and its id as stored. */
const readKey = (kind: ResourceKind, stored: string) => `${kind}\u0000${stored}`;

/**
 * Every grant, in memory, indexed by resource: a decision is one map look-up and a scan of that
 * resource's few grants — no SQL on any request, cold or warm. Each entry is a flat list of
 * (grantee, permission) pairs, the grantee a user id (> 0) or a negated group id (< 0).
 *
 * Changes reach it through `changed(ref)` (that resource is re-read) or `reloadAll()` (after
 * deleting users or groups, whose ids SQLite may hand out again). The index is empty until the first
 * `reloadAll()` resolves.
 *
 * Pattern grants (`patternGrants`, re-read with `reloadPatterns()` and `reloadAll()`) rank below the
 * resource's own grants: see `withPatterns`. An experiment ref must carry its name when its caller
 * holds experiment pattern grants (`needsName`), else the facts are refused rather than given
 * without the patterns.
 */
export function createPolicyReader(grants: GrantsRepo, patternGrants: { all(): Promise<PatternGrant[]> } = { all: async () => [] }) {
  let index = new GrantIndex();
  /** Counts the changes applied: the decision log names the policy a decision was made under. */
  let generation = 0;
  const patterns = createPatternPolicy(() => patternGrants.all());

  function load(rows: Iterable<IndexedGrant>, next = new GrantIndex()) {
    for (const r of rows) {
      const kind = r.kind === null ? undefined : RESOURCE_KINDS[r.kind];
      // A kind or level only a newer version writes: no route of this one asks about it.
      if (kind === undefined || r.grant_rank === null) continue;
      next.add(kind, r.resource_id, r.grantee, r.grant_rank);
    }
    return next;
  }

  /** The latest re-read started per resource, while one is in flight. */
  const inFlight = new Map<string, { readonly n: number; readonly done: Promise<void> }>();
  let reads = 0;

  /*
   * Bumped by each full reload as it starts. A read started in an older epoch holds an older state
   * than the reload that bumped it (reads answer out of order: separate pool connections, a slow
   * page), so it is dropped rather than applied over that reload, and a reload overtaken by a newer
   * one is not installed.
   */
  let epoch = 0;
  /** The newest full reload, while in flight: what a dropped read waits for instead. */
  let newestReload: Promise<void> | undefined;

  function reread(ref: ResourceRef): Promise<void> {
    const stored = storedId(ref.kind, ref.id);
    const key = readKey(ref.kind, stored);
    const n = ++reads;
    const startedIn = epoch;
    const done = grants.onResourceIndexed(ref.kind, ref.id).then(
      (rows): void | Promise<void> => {
        const latest = inFlight.get(key);
        // A newer read of the resource already landed (gone) or is on its way (wait for it).
        if (latest === undefined) return;
        if (latest.n !== n) return latest.done;
        inFlight.delete(key);
        if (startedIn !== epoch) return newestReload;
        const fresh = load(rows).seal().get(ref.kind, stored);
        generation++;
        changedDuringReload?.set(key, { kind: ref.kind, stored, fresh });
        index.replace(ref.kind, stored, fresh);
      },
      (err: unknown) => {
        if (inFlight.get(key)?.n === n) inFlight.delete(key);
        throw err;
      },
    );
    inFlight.set(key, { n, done });
    return done;
  }

  /** Resources re-read while a full reload was in flight: its older snapshot must not undo them. */
  let changedDuringReload: Map<string, { kind: ResourceKind; stored: string; fresh: readonly number[] | undefined }> | undefined;

  async function readAll(mine: number, changes: NonNullable<typeof changedDuringReload>): Promise<void> {
    try {
      const next = new GrantIndex();
      const loadGrants = async () => {
        for await (const page of grants.pages()) load(page, next);
        next.seal();
      };
      await Promise.all([loadGrants(), patterns.reload()]);
      if (mine !== epoch) return;
      for (const { kind, stored, fresh } of changes.values()) next.replace(kind, stored, fresh);
      index = next;
      generation++;
    } finally {
      if (changedDuringReload === changes) changedDuringReload = undefined;
    }
  }

  async function reloadAll(): Promise<void> {
    const mine = ++epoch;
    const changes: NonNullable<typeof changedDuringReload> = new Map();
    changedDuringReload = changes;
    const done = readAll(mine, changes);
    newestReload = done;
    try {
      await done;
    } finally {
      if (newestReload === done) newestReload = undefined;
    }
    // Overtaken: the index is the newer reload's, once it ends.
    if (mine !== epoch) return newestReload;
  }

  /** An AI-gateway id MLflow does not have: nothing bears on it (no grant, no pattern), whatever its text. */
  const missing = (ref: ResourceRef) => 'missing' in ref && ref.missing === true;

  /** The grants on the resource itself. */
  function ownFacts(who: Grantee, ref: ResourceRef): GrantFacts {
    if (missing(ref)) return NO_FACTS;
    const list = index.get(ref.kind, storedId(ref.kind, ref.id));
    if (list === undefined) return NO_FACTS;
    let direct: Permission | undefined;
    let groups: Permission[] | undefined;
    for (let i = 0; i < list.length; i += 2) {
      const grantee = list[i]!;
      if (grantee === who.userId) direct = BY_RANK[list[i + 1]!];
      else if (grantee < 0 && who.groupIds.includes(-grantee)) (groups ??= []).push(BY_RANK[list[i + 1]!]!);
    }
    return { direct, groups: groups ?? NO_FACTS.groups };
  }

  /** The caller's groups' grants on the resource itself, in `who.groupIds` order (for explanations). */
  function groupGrants(who: Grantee, ref: ResourceRef): Array<{ readonly groupId: number; readonly permission: Permission }> {
    if (missing(ref)) return [];
    const list = index.get(ref.kind, storedId(ref.kind, ref.id));
    if (list === undefined) return [];
    const byGroup = new Map<number, Permission>();
    for (let i = 0; i < list.length; i += 2) if (list[i]! < 0) byGroup.set(-list[i]!, BY_RANK[list[i + 1]!]!);
    return who.groupIds.flatMap((groupId) => (byGroup.has(groupId) ? [{ groupId, permission: byGroup.get(groupId)! }] : []));
  }

  return {
    factsFor(who: Grantee, ref: ResourceRef): GrantFacts {
      if (missing(ref)) return NO_FACTS;
      return patterns.compose(ownFacts(who, ref), who, ref);
    },
    /** The caller's own grant on the resource itself (no patterns), and each of their groups' (see `groupGrants`). */
    ownGrants: (who: Grantee, ref: ResourceRef) => ({ direct: ownFacts(who, ref).direct, groups: groupGrants(who, ref) }),
    /** The experiment's name decides for this caller (they hold experiment patterns, and it has no grant of theirs). */
    needsName(who: Grantee, ref: ResourceRef): boolean {
      if (!hasNumericId(ref) || ref.name !== undefined || !patterns.needsExperimentNames(who)) return false;
      const own = ownFacts(who, ref);
      return own.direct === undefined && own.groups.length === 0;
    },
    /** Whether any experiment decision for this caller may need a name (a cheap per-caller check). */
    mayNeedExperimentNames: (who: Grantee) => patterns.needsExperimentNames(who),
    /** Pattern grants changed: re-read them. */
    reloadPatterns: () => patterns.reload().then(() => void generation++),
    /** Every pattern grant (any grantee) matching the name. */
    matchingPatterns: patterns.matching,
    /** Whether anyone holds a pattern grant of the kind (in any workspace). */
    patternGrantsOf: patterns.anyOf,
    /** The caller's and their groups' deciding pattern grants on the name. */
    bearingPatterns: patterns.bearing,
    /**
     * The grants of these resources changed: re-read just them. Resolves once the index holds a read
     * started after this call: two re-reads of one resource may answer out of order (separate pool
     * connections), and only the one started last is kept, so an earlier one waits for it. An array,
     * as storedChanged's: a workspace's drop may name more resources than a call takes as arguments.
     */
    async changed(refs: readonly ResourceRef[]): Promise<void> {
      if (refs.length > FULL_RELOAD_ABOVE) return reloadAll();
      await Promise.all(refs.map(reread));
    },
    /**
     * The same for resources named by their stored ids (another process's change log): each re-read in
     * its own workspace. An array, never rest parameters: a change may name more resources than a
     * call can take as arguments (a RangeError, thrown where nothing catches it).
     */
    async storedChanged(refs: readonly ResourceRef[]): Promise<void> {
      if (refs.length > FULL_RELOAD_ABOVE) return reloadAll();
      await Promise.all(
        refs.map((ref) => {
          if (!keyedInWorkspace(ref.kind)) return reread(ref);
          const { workspace, id } = splitQualified(ref.id);
          return inWorkspace(workspace, () => reread(Object.assign({}, ref, { id })));
        }),
      );
    },
    reloadAll,
    get resources(): number {
      return index.size;
    },
    get generation(): number {
      return generation;
    },
    get patternGrants(): number {
      return patterns.size;
    },
  };
}

export type PolicyReader = ReturnType<typeof createPolicyReader>;
