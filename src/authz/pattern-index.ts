import { LazyLru } from '../lazy-lru.js';
import { rank } from '../resources/permissions.js';
import type { Grantee } from './grants-repo.js';
import { NO_PATTERN_FACTS, type PatternFacts } from './pattern-facts.js';
import { compilePattern, prepareName, type CompiledPattern, type PreparedName } from './pattern-match.js';
import type { Permission, ResourceKind } from './types.js';

/** A grant on every resource of `kind` whose name matches `pattern`. */
export interface PatternGrant {
  readonly kind: ResourceKind;
  readonly pattern: string;
  readonly grantee: Grantee;
  readonly permission: Permission;
}

interface Entry {
  readonly grant: PatternGrant;
  readonly compiled: CompiledPattern;
  readonly patternLength: number;
}

/** The grants of one kind, filed under their literal prefix; `lengths` holds each prefix length once. */
interface KindTable {
  readonly byPrefix: Map<string, Entry[]>;
  readonly lengths: readonly number[];
}

/** What one name matched: every grant, and each grantee's deciding one. */
interface Matched {
  readonly entries: readonly Entry[];
  readonly users: ReadonlyMap<number, Entry>;
  readonly groups: ReadonlyMap<number, Entry>;
}

const NOTHING: Matched = Object.freeze({ entries: [], users: new Map(), groups: new Map() });

export interface PatternIndexOptions {
  /** How many (kind, name) answers to remember. */
  readonly cacheSize?: number;
}

/**
 * Every pattern grant, in memory. A look-up tests only the patterns whose literal prefix starts the
 * name (one map probe per distinct prefix length), and remembers its answer per (kind, name) until
 * the next reload, so a warm decision tests no pattern at all.
 */
export function createPatternIndex(grants: Iterable<PatternGrant> = [], options: PatternIndexOptions = {}) {
  let tables = build(grants);
  const cache = new LazyLru<string, Matched>({ max: options.cacheSize ?? 10_000 });

  function matched(kind: ResourceKind, name: string): Matched {
    const key = `${kind}\u0000${name}`;
    let m = cache.get(key);
    if (m === undefined) cache.set(key, (m = match(tables.get(kind), name)));
    return m;
  }

  return {
    /** The caller's own pattern grant on this name, and one per group of theirs with a match (in `groupIds` order). */
    factsFor(kind: ResourceKind, name: string, userId: number, groupIds: readonly number[]): PatternFacts {
      const m = matched(kind, name);
      if (m === NOTHING) return NO_PATTERN_FACTS;
      const direct = m.users.get(userId)?.grant.permission;
      let groups: Permission[] | undefined;
      if (m.groups.size > 0)
        for (const g of groupIds) {
          const e = m.groups.get(g);
          if (e !== undefined) (groups ??= []).push(e.grant.permission);
        }
      if (direct === undefined && groups === undefined) return NO_PATTERN_FACTS;
      return { direct, groups: groups ?? NO_PATTERN_FACTS.groups };
    },
    /** The grants `factsFor` answers from: the caller's deciding one, then one per group of theirs (in `groupIds` order). */
    bearing(kind: ResourceKind, name: string, userId: number, groupIds: readonly number[]): readonly PatternGrant[] {
      const m = matched(kind, name);
      const own = m.users.get(userId);
      const found = own === undefined ? [] : [own.grant];
      for (const g of groupIds) {
        const e = m.groups.get(g);
        if (e !== undefined) found.push(e.grant);
      }
      return found;
    },
    /** Every pattern grant (any grantee) matching this name. */
    matching(kind: ResourceKind, name: string): readonly PatternGrant[] {
      return matched(kind, name).entries.map((e) => e.grant);
    },
    /** Replaces every grant; on a pattern that does not compile, throws and keeps the old ones. */
    reload(next: Iterable<PatternGrant>): void {
      tables = build(next);
      cache.clear();
    },
    get size(): number {
      let n = 0;
      for (const t of tables.values()) for (const list of t.byPrefix.values()) n += list.length;
      return n;
    },
  };
}

export type PatternIndex = ReturnType<typeof createPatternIndex>;

function build(grants: Iterable<PatternGrant>): Map<ResourceKind, KindTable> {
  const byKind = new Map<ResourceKind, Map<string, Entry[]>>();
  for (const grant of grants) {
    const compiled = compilePattern(grant.pattern);
    let byPrefix = byKind.get(grant.kind);
    if (byPrefix === undefined) byKind.set(grant.kind, (byPrefix = new Map()));
    let list = byPrefix.get(compiled.literalPrefix);
    if (list === undefined) byPrefix.set(compiled.literalPrefix, (list = []));
    list.push({ grant, compiled, patternLength: [...grant.pattern].length });
  }
  const tables = new Map<ResourceKind, KindTable>();
  for (const [kind, byPrefix] of byKind) {
    const lengths = [...new Set([...byPrefix.keys()].map((p) => p.length))].sort((a, b) => a - b);
    tables.set(kind, { byPrefix, lengths });
  }
  return tables;
}

function match(table: KindTable | undefined, name: string): Matched {
  if (table === undefined) return NOTHING;
  let found: Entry[] | undefined;
  let prepared: PreparedName | undefined;
  for (const length of table.lengths) {
    if (length > name.length) break;
    const candidates = table.byPrefix.get(name.slice(0, length));
    if (candidates === undefined) continue;
    prepared ??= prepareName(name);
    for (const e of candidates) if (e.compiled.matchesPrepared(prepared)) (found ??= []).push(e);
  }
  if (found === undefined) return NOTHING;
  const users = new Map<number, Entry>();
  const groups = new Map<number, Entry>();
  for (const e of found) {
    const side = e.grant.grantee.type === 'user' ? users : groups;
    const held = side.get(e.grant.grantee.id);
    if (held === undefined || moreSpecific(e, held)) side.set(e.grant.grantee.id, e);
  }
  return { entries: found, users, groups };
}

/**
 * When several patterns of one grantee match a name, the most specific decides: the longest literal
 * prefix (`team-a/prod-*` over `team-a/*`), then the longest pattern (`team-a/*-prod` over
 * `team-a/*`); patterns alike on both give the lesser permission, so the answer never depends on
 * load order and a tie never widens access. A group's patterns resolve the same way, to the one
 * permission that group contributes, before the deny rule across groups applies.
 */
function moreSpecific(a: Entry, b: Entry): boolean {
  const prefix = a.compiled.literalPrefix.length - b.compiled.literalPrefix.length;
  if (prefix !== 0) return prefix > 0;
  if (a.patternLength !== b.patternLength) return a.patternLength > b.patternLength;
  return rank(a.grant.permission) < rank(b.grant.permission);
}
