import SCIMMY from 'scimmy';
import type { ScimFilter, ScimRecord } from './scimmy.js';

/**
 * SCIM filters over attributes the core schema marks `caseExact: false` (RFC 7643 §4.1.1
 * `userName`, §4.1.1 and §4.2 `displayName`) compare without regard to case, so an identity
 * provider that looks up `userName eq "Alice"` finds `alice`. scimmy's own `match` compares every
 * string exactly: both the filter's values and the records' values of those attributes are
 * lower-cased, matched, and the original records answered.
 */
export function matchIgnoringCase<T extends ScimRecord>(filter: ScimFilter, records: readonly T[], caseless: readonly string[]): T[] {
  const names = new Set(caseless.map((a) => a.toLowerCase()));
  const isCaseless = (attribute: string) => names.has(attribute.toLowerCase());
  const expressions = Array.from({ length: filter.length }, (_, i) => filter[i]!);
  const folded = new SCIMMY.Types.Filter(
    expressions.map((branch) => Object.fromEntries(Object.entries(branch).map(([attribute, e]) => [attribute, isCaseless(attribute) ? foldExpressions(e) : e]))),
  );
  const originals = new Map<object, T>();
  const candidates = records.map((record) => {
    const copy = Object.fromEntries(Object.entries(record).map(([attribute, v]) => [attribute, isCaseless(attribute) ? fold(v) : v]));
    originals.set(copy, record);
    return copy;
  });
  return folded.match(candidates).map((copy) => originals.get(copy)!);
}

const fold = (v: unknown): unknown => (typeof v === 'string' ? v.toLowerCase() : v);

/**
 * One attribute's comparisons: `["eq", "Alice"]`, `["not", "sw", "A"]`, or several of them joined by
 * `and`. Every string in them is folded: the operator words are read without regard to case anyway.
 * A complex attribute's sub-filter (an object) names other attributes and is left as it is.
 */
function foldExpressions(e: unknown): unknown {
  if (!Array.isArray(e)) return e;
  return e.every(Array.isArray) ? e.map((one: unknown[]) => one.map(fold)) : e.map(fold);
}
