/**
 * mlflow-oidc-auth's regex rules as flowgate name globs (`*`, `?`, `\` escapes: src/authz/pattern-match.ts).
 * The plugin tests a rule with Python's `re.match(regex, name)`: anchored at the start only, so a
 * regex without a closing `$` matches every name that starts with what it spells. Only regexes whose
 * set of matched names a glob spells exactly are translated; anything else is refused with its reason.
 *
 * One assumption, stated wherever it matters: names hold no line break. Python's `.` does not match
 * `\n` and its `$` also matches before a final `\n`; MLflow names with line breaks are not expected,
 * and for names without them `.*` is exactly `*`, `.` exactly `?` and `$` exactly the glob's end.
 */

export type RegexTranslation = { readonly glob: string } | { readonly refused: string };

const QUANTIFIERS = new Set(['*', '+', '?', '{']);
/** Characters that are not literal in a Python regex outside a character class. */
const META = new Set(['.', '^', '$', '*', '+', '?', '{', '}', '[', ']', '\\', '|', '(', ')']);
const GLOB_SPECIAL = new Set(['*', '?', '\\']);

const escapeGlob = (c: string) => (GLOB_SPECIAL.has(c) ? `\\${c}` : c);
const isWordChar = (c: string) => /^[A-Za-z0-9]$/.test(c);

/** The glob matching exactly the names `re.match(regex, name)` matches, or why there is none. */
export function regexToGlob(regex: string): RegexTranslation {
  const chars = [...regex];
  let i = 0;
  if (chars[0] === '^') i = 1;
  else if (chars[0] === '\\' && chars[1] === 'A') i = 2;
  let glob = '';
  let endsWithStar = false;
  let anchoredEnd = false;
  const star = () => {
    if (!endsWithStar) glob += '*';
    endsWithStar = true;
  };
  const literal = (c: string) => {
    glob += escapeGlob(c);
    endsWithStar = false;
  };
  while (i < chars.length) {
    const c = chars[i]!;
    const next = chars[i + 1];
    if (c === '.') {
      if (next === '*' || next === '+') {
        const after = chars[i + 2];
        if (after === '?' || after === '+') return { refused: 'a lazy or possessive quantifier' };
        if (next === '+') {
          glob += '?';
          endsWithStar = false;
        }
        star();
        i += 2;
      } else if (next === '?' || next === '{') return { refused: 'a counted or optional wildcard' };
      else {
        glob += '?';
        endsWithStar = false;
        i += 1;
      }
      continue;
    }
    if (c === '$') {
      if (i !== chars.length - 1) return { refused: "a '$' before the end" };
      anchoredEnd = true;
      i += 1;
      continue;
    }
    if (c === '\\') {
      if (next === undefined) return { refused: "a lone '\\' at the end" };
      if (next === 'Z' && i + 2 === chars.length) {
        anchoredEnd = true;
        i += 2;
        continue;
      }
      if (isWordChar(next)) return { refused: `the escape '\\${next}' (a class, an anchor or a back-reference)` };
      if (chars[i + 2] !== undefined && QUANTIFIERS.has(chars[i + 2]!)) return { refused: 'a quantifier on a character' };
      literal(next);
      i += 2;
      continue;
    }
    if (c === '[' || c === ']') return { refused: 'a character class' };
    if (c === '|') return { refused: 'an alternation' };
    if (c === '(' || c === ')') return { refused: 'a group' };
    if (c === '^') return { refused: "a '^' after the start" };
    if (META.has(c)) return { refused: `a quantifier ('${c}') on a character` };
    if (next !== undefined && QUANTIFIERS.has(next)) return { refused: 'a quantifier on a character' };
    literal(c);
    i += 1;
  }
  if (!anchoredEnd) star();
  if (glob === '') return { refused: 'it matches no name' };
  return { glob };
}

/**
 * A glob every name the regex may match also matches: its literal beginning, then anything (`*`
 * when it has none, or may branch). Wider than the regex, so it serves only to deny, never to grant.
 */
export function regexRegion(regex: string): string {
  const chars = [...regex];
  // Flags and alternations can change or branch away from any literal beginning.
  if (chars.includes('|') || regex.includes('(?')) return '*';
  let i = 0;
  if (chars[0] === '^') i = 1;
  else if (chars[0] === '\\' && chars[1] === 'A') i = 2;
  let prefix = '';
  while (i < chars.length) {
    const c = chars[i]!;
    let literal: string | undefined;
    let width = 1;
    if (c === '\\') {
      const next = chars[i + 1];
      if (next === undefined || isWordChar(next)) break;
      literal = next;
      width = 2;
    } else if (!META.has(c)) literal = c;
    if (literal === undefined) break;
    // A character a quantifier follows may be absent (or repeated): the beginning ends before it.
    const after = chars[i + width];
    if (after !== undefined && QUANTIFIERS.has(after)) break;
    prefix += escapeGlob(literal);
    i += width;
  }
  return `${prefix}*`;
}

type Token = { readonly lit: string } | 'any' | 'star';

function tokens(glob: string): Token[] {
  const out: Token[] = [];
  const chars = [...glob];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '\\') out.push({ lit: chars[++i] ?? '' });
    else if (c === '*') out.push('star');
    else if (c === '?') out.push('any');
    else out.push({ lit: c });
  }
  return out;
}

/** Whether some name matches both globs: a search over pairs of positions, exact. */
export function globsOverlap(a: string, b: string): boolean {
  const x = tokens(a);
  const y = tokens(b);
  const seen = new Set<number>();
  const width = y.length + 1;
  const stack: Array<[number, number]> = [[0, 0]];
  while (stack.length > 0) {
    const [i, j] = stack.pop()!;
    const key = i * width + j;
    if (seen.has(key)) continue;
    seen.add(key);
    if (i === x.length && j === y.length) return true;
    const s = x[i];
    const t = y[j];
    // A star may match nothing.
    if (s === 'star') stack.push([i + 1, j]);
    if (t === 'star') stack.push([i, j + 1]);
    if (s === undefined || t === undefined) continue;
    // Both take one character: two literals must be the same one.
    if (typeof s === 'object' && typeof t === 'object' && s.lit !== t.lit) continue;
    const ni = s === 'star' ? i : i + 1;
    const nj = t === 'star' ? j : j + 1;
    if (ni !== i || nj !== j) stack.push([ni, nj]);
  }
  return false;
}
