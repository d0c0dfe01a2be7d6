import { FlowgateError } from '../errors.js';
import { keyedInWorkspace, knownName, NUMERIC_KINDS } from '../resources/kinds.js';
import { holdsSeparator, qualify, splitQualified } from '../workspaces/names.js';
import { currentWorkspace } from '../workspaces/request-workspace.js';
import type { GrantFacts } from './decide.js';
import { withPatterns } from './pattern-facts.js';
import { createPatternIndex, type PatternGrant, type PatternIndex } from './pattern-index.js';
import type { ResourceKind, ResourceRef } from './types.js';

/** Who the facts are for: the caller and the groups they belong to. */
interface Caller {
  readonly userId: number;
  readonly groupIds: readonly number[];
}

/** The users and groups holding at least one pattern grant of a kind. */
interface Holders {
  readonly users: ReadonlySet<number>;
  readonly groups: ReadonlySet<number>;
}

const NO_HOLDERS: Holders = Object.freeze({ users: new Set<number>(), groups: new Set<number>() });

function holdersOf(grants: readonly PatternGrant[]): Map<ResourceKind, Holders> {
  const byKind = new Map<ResourceKind, { users: Set<number>; groups: Set<number> }>();
  for (const g of grants) {
    let h = byKind.get(g.kind);
    if (h === undefined) byKind.set(g.kind, (h = { users: new Set(), groups: new Set() }));
    (g.grantee.type === 'user' ? h.users : h.groups).add(g.grantee.id);
  }
  return byKind;
}

/** A name as patterns are matched against it: in the request's workspace, whose patterns alone match it. */
const inWorkspace = (kind: ResourceKind, name: string): string => (keyedInWorkspace(kind) ? qualify(currentWorkspace(), name) : name);

/** Pattern grants by their patterns as written (without the workspace they are stored in). */
const asWritten = (grants: readonly PatternGrant[]): readonly PatternGrant[] =>
  grants.some((g) => holdsSeparator(g.pattern)) ? grants.map((g) => Object.assign({}, g, { pattern: splitQualified(g.pattern).id })) : grants;

/** A decision on an experiment needed its name and was given none: refused, never decided without the patterns. */
export const experimentNameMissing = (id: string) =>
  new FlowgateError('TEMPORARILY_UNAVAILABLE', `Could not decide on experiment '${id}': its name is not known`);

/**
 * The pattern side of the policy: the index of pattern grants and, per kind, who holds any. A
 * caller holding no pattern grant of a kind is decided exactly as before (one set probe), so only
 * pattern holders pay for name matching, and only they need experiment names looked up.
 */
export function createPatternPolicy(load: () => Promise<PatternGrant[]>) {
  const index: PatternIndex = createPatternIndex();
  let holders = new Map<ResourceKind, Holders>();
  let started = 0;
  let applied = 0;

  function holds(kind: ResourceKind, who: Caller): boolean {
    const h = holders.get(kind) ?? NO_HOLDERS;
    if (h.users.size === 0 && h.groups.size === 0) return false;
    if (h.users.has(who.userId)) return true;
    for (const g of who.groupIds) if (h.groups.has(g)) return true;
    return false;
  }

  return {
    /** Re-reads every pattern grant; an older read finishing late never replaces a newer one. */
    async reload(): Promise<void> {
      const mine = ++started;
      const grants = await load();
      if (mine < applied) return;
      index.reload(grants);
      holders = holdersOf(grants);
      applied = mine;
    },
    /** Whether a decision on an experiment for this caller needs the experiment's name (a numeric id's name is looked up). */
    needsExperimentNames: (who: Caller): boolean => NUMERIC_KINDS.some((kind) => holds(kind, who)),
    /** The resource's own facts, composed with the caller's pattern grants on its name. */
    compose(facts: GrantFacts, who: Caller, ref: ResourceRef): GrantFacts {
      if (!holds(ref.kind, who)) return facts;
      if (facts.direct !== undefined || facts.groups.length > 0) return facts;
      // A model's or prompt's id is its name; an experiment's name comes from MLflow.
      const name = knownName(ref);
      if (name === null) return facts;
      if (name === undefined) throw experimentNameMissing(ref.id);
      return withPatterns(facts, index.factsFor(ref.kind, inWorkspace(ref.kind, name), who.userId, who.groupIds));
    },
    /** The caller's and their groups' deciding pattern grants on the name (for explanations). */
    bearing: (kind: ResourceKind, name: string, who: Caller): readonly PatternGrant[] => asWritten(index.bearing(kind, inWorkspace(kind, name), who.userId, who.groupIds)),
    /** Every pattern grant (any grantee) matching the name. */
    matching: (kind: ResourceKind, name: string): readonly PatternGrant[] => index.matching(kind, inWorkspace(kind, name)),
    /** Whether anyone holds a pattern grant of the kind (in any workspace). */
    anyOf: (kind: ResourceKind): boolean => holders.has(kind),
    get size(): number {
      return index.size;
    },
  };
}

export type PatternPolicy = ReturnType<typeof createPatternPolicy>;
