import { badRequest } from '../errors.js';
import { SEPARATOR, workspaceNameProblem } from '../workspaces/names.js';

export const MAX_PATTERN_LENGTH = 256;

/** `?` in a compiled segment: any one character. */
const ANY = Symbol('any character');
type Segment = readonly (string | typeof ANY)[];

/**
 * A name glob: `*` any run of characters (none included), `?` one character, `\` makes the next
 * character literal. Case-sensitive, as MLflow compares names. A character is a code point, so `?`
 * matches an emoji as one.
 */
export interface CompiledPattern {
  readonly source: string;
  /** The literal text before the first wildcard (escapes resolved): every match starts with it. */
  readonly literalPrefix: string;
  matches(name: string): boolean;
  /** The same, for a name prepared once to be tested against many patterns. */
  matchesPrepared(name: PreparedName): boolean;
}

/** A name indexed by code point: a plain string when it has no surrogate pair, else its code points. */
export type PreparedName = ArrayLike<string>;

export const prepareName = (name: string): PreparedName => (/[\uD800-\uDFFF]/.test(name) ? [...name] : name);

/** A control character (U+0000-U+001F, U+007F). */
const CONTROL = /[\u0000-\u001f\u007f]/;
const CONTROL_MESSAGE = 'a pattern must not contain control characters (U+0000-U+001F, U+007F)';

/**
 * Why a pattern may not be stored, or undefined when it may. Besides its shape (`shapeProblem`), a
 * pattern holds no control character: flowgate takes none in a name it keeps a grant on (nor in a
 * request's path), and one in a pattern is one no one can read back or type (`a\u0007*`).
 */
export function patternProblem(pattern: string): string | undefined {
  if (!pattern.includes('\u0000')) {
    // A separator after a valid workspace name is flowgate's own (a stored pattern): the pattern is what follows it.
    const at = pattern.indexOf(SEPARATOR);
    const own = at >= 0 && workspaceNameProblem(pattern.slice(0, at)) === undefined ? pattern.slice(at + 1) : pattern;
    if (CONTROL.test(own)) return CONTROL_MESSAGE;
  }
  return shapeProblem(pattern);
}

/**
 * Why a pattern cannot be compiled: what `patternProblem` checks but control characters, so a pattern
 * grant kept before they were refused still compiles (and can be listed and removed).
 */
function shapeProblem(pattern: string): string | undefined {
  if (pattern.length === 0) return 'a pattern must not be empty';
  if ([...pattern].length > MAX_PATTERN_LENGTH) return `a pattern must be at most ${MAX_PATTERN_LENGTH} characters`;
  // PostgreSQL's TEXT cannot hold it, and no MLflow name contains it.
  if (pattern.includes('\u0000')) return 'a pattern must not contain a NUL character';
  // The workspace separator of stored names (src/workspaces/names.ts): a pattern holds it only as
  // flowgate puts it there, after a valid workspace name.
  const at = pattern.indexOf(SEPARATOR);
  if (at >= 0 && (workspaceNameProblem(pattern.slice(0, at)) !== undefined || pattern.indexOf(SEPARATOR, at + 1) >= 0))
    return CONTROL_MESSAGE;
  const parsed = parse(pattern);
  if (parsed === undefined) return `pattern '${pattern}' ends with a lone '\\' (write '\\\\' for a backslash)`;
  if (parsed.segments.length === 1 && !parsed.segments[0]!.includes(ANY))
    return `pattern '${pattern}' has no wildcard ('*' or '?'): grant on the resource itself instead`;
  return undefined;
}

/** Compiles a valid pattern; an invalid one is refused with the client-facing reason. */
export function compilePattern(pattern: string): CompiledPattern {
  const problem = shapeProblem(pattern);
  if (problem !== undefined) throw badRequest(problem);
  const { segments, literalPrefix } = parse(pattern)!;
  // A pattern of the default workspace matches its names alone: a name of another workspace holds
  // the separator, which only that workspace's patterns spell (as their literal prefix).
  const inDefault = !pattern.includes(SEPARATOR);
  const sameWorkspace = (name: PreparedName) => !inDefault || (typeof name === 'string' ? name.indexOf(SEPARATOR) : Array.prototype.indexOf.call(name, SEPARATOR)) < 0;
  return {
    source: pattern,
    literalPrefix,
    matches: (name) => {
      const prepared = prepareName(name);
      return sameWorkspace(prepared) && matchSegments(segments, prepared);
    },
    matchesPrepared: (name) => sameWorkspace(name) && matchSegments(segments, name),
  };
}

/** Splits at each unescaped `*`; undefined when the pattern ends inside an escape. */
function parse(pattern: string): { segments: Segment[]; literalPrefix: string } | undefined {
  const segments: Segment[] = [];
  let current: (string | typeof ANY)[] = [];
  let literalPrefix: string | undefined;
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '\\') {
      if (i + 1 === chars.length) return undefined;
      current.push(chars[++i]!);
    } else if (c === '*' || c === '?') {
      literalPrefix ??= prefixText(segments, current);
      if (c === '*') {
        segments.push(current);
        current = [];
      } else current.push(ANY);
    } else current.push(c);
  }
  segments.push(current);
  return { segments, literalPrefix: literalPrefix ?? prefixText(segments, []) };
}

function prefixText(segments: readonly Segment[], current: readonly (string | typeof ANY)[]): string {
  // Called at the first wildcard, so everything before it is literal text.
  return [...segments.flat(), ...current].join('');
}

/**
 * The segments between stars must appear in order: the first anchored at the start, the last at
 * the end, each middle one at its leftmost place (a fixed-length segment placed leftmost never
 * rules out a match a later place allows). So no backtracking: at most name × segment steps each.
 */
function matchSegments(segments: readonly Segment[], chars: PreparedName): boolean {
  const first = segments[0]!;
  if (segments.length === 1) return first.length === chars.length && fitsAt(first, chars, 0);
  const last = segments[segments.length - 1]!;
  if (first.length + last.length > chars.length) return false;
  if (!fitsAt(first, chars, 0) || !fitsAt(last, chars, chars.length - last.length)) return false;
  let at = first.length;
  const end = chars.length - last.length;
  for (let s = 1; s < segments.length - 1; s++) {
    const seg = segments[s]!;
    while (at + seg.length <= end && !fitsAt(seg, chars, at)) at++;
    if (at + seg.length > end) return false;
    at += seg.length;
  }
  return true;
}

function fitsAt(seg: Segment, chars: ArrayLike<string>, at: number): boolean {
  for (let j = 0; j < seg.length; j++) {
    const want = seg[j]!;
    if (want !== ANY && want !== chars[at + j]) return false;
  }
  return true;
}
