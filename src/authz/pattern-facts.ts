import type { GrantFacts } from './decide.js';
import type { Permission } from './types.js';

/**
 * The pattern grants on one resource name that bear on one caller: their own (one, the most
 * specific of theirs that matches) and one per group of theirs that has a matching pattern.
 */
export interface PatternFacts {
  readonly direct: Permission | undefined;
  readonly groups: readonly Permission[];
}

export type { PatternReason } from '../resources/reasons.js';

/** Facts a pattern decided: `direct` is the caller's pattern grant, `groups` their groups' pattern grants. */
export interface FactsWithPatterns extends GrantFacts {
  readonly fromPattern?: boolean;
}

export const NO_PATTERN_FACTS: PatternFacts = Object.freeze({
  direct: undefined,
  groups: Object.freeze([]) as readonly Permission[],
});

/**
 * Grants on the resource itself rank above any pattern: the caller's direct grant, then the
 * resource's group grants (NO_PERMISSIONS in one denies). Only a resource with neither falls to
 * patterns, which follow the same two steps: the caller's pattern grant, then their groups'
 * pattern grants with the same deny rule. With none of these, the default applies.
 *
 * Both steps have the shape `effectivePermission` already decides, so the answer is plain
 * GrantFacts marked `fromPattern`, and the decision names the pattern reasons from that mark.
 */
export function withPatterns(facts: GrantFacts, patterns: PatternFacts): FactsWithPatterns {
  if (facts.direct !== undefined || facts.groups.length > 0) return facts;
  if (patterns.direct !== undefined) return { direct: patterns.direct, groups: NO_PATTERN_FACTS.groups, fromPattern: true };
  if (patterns.groups.length > 0) return { direct: undefined, groups: patterns.groups, fromPattern: true };
  return facts;
}
