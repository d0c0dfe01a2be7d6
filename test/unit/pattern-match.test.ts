import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FlowgateError } from '../../src/errors.js';
import { compilePattern, patternProblem } from '../../src/authz/pattern-match.js';

describe('compilePattern: which names a glob matches', () => {
  it.each<[string, string, boolean]>([
    ['team-a/*', 'team-a/', true],
    ['team-a/*', 'team-a/churn', true],
    ['team-a/*', 'team-a/x/y', true],
    ['team-a/*', 'team-b/churn', false],
    ['team-a/*', 'Team-A/churn', false],
    ['team-a/*', 'team-a', false],
    ['*-prod', 'churn-prod', true],
    ['*-prod', 'churn-prod-old', false],
    ['run-?', 'run-1', true],
    ['run-?', 'run-', false],
    ['run-?', 'run-12', false],
    ['run-?', 'run-😀', true],
    ['a*b*c', 'abc', true],
    ['a*b*c', 'axxbyyc', true],
    ['a*b*c', 'acb', false],
    ['a*bc*bc', 'abcbcbc', true],
    ['a*b?d*e', 'abxbcde', true],
    ['*', '', true],
    ['**', 'anything', true],
    ['\\*x*', '*xyz', true],
    ['\\*x*', 'axyz', false],
    ['what\\?*', 'what?now', true],
    ['what\\?*', 'whatsnow', false],
    ['back\\\\*', 'back\\slash', true],
    ['a.b*', 'axb', false],
    ['[ab]*', '[ab]c', true],
    ['[ab]*', 'ac', false],
  ])('%s on %s → %s', (pattern, name, expected) => {
    expect(compilePattern(pattern).matches(name)).toBe(expected);
  });

  it.each<[string, string]>([
    ['team-a/*', 'team-a/'],
    ['*', ''],
    ['?x*', ''],
    ['\\*lit*', '*lit'],
    ['a\\?b?', 'a?b'],
  ])('the literal prefix of %s is %j', (pattern, prefix) => {
    expect(compilePattern(pattern).literalPrefix).toBe(prefix);
  });
});

describe('patternProblem: what may not be stored', () => {
  it.each<[string, RegExp]>([
    ['', /must not be empty/],
    ['team-a/churn', /no wildcard.*grant on the resource itself/],
    ['team-a\\*', /no wildcard/],
    ['x'.repeat(256) + '*', /at most 256 characters/],
    ['trailing*\\', /lone '\\'/],
    ['nul\u0000*', /NUL/],
  ])('%j is refused', (pattern, message) => {
    expect(patternProblem(pattern)).toMatch(message);
    expect(() => compilePattern(pattern)).toThrow(FlowgateError);
    try {
      compilePattern(pattern);
    } catch (e) {
      expect((e as FlowgateError).code).toBe('INVALID_PARAMETER_VALUE');
      expect((e as FlowgateError).message).toMatch(message);
    }
  });

  it.each(['a\u0007*', 'tab\t*', 'line\n*', 'del\u007f*', '\u001b[31m*', 'a\u0007', '\u001f*', 'ws-a\u001fteam\u0007*', 'ws-a\u001f\u001f*'])(
    '%j holds a control character: refused, saying so',
    (pattern) => {
      expect(patternProblem(pattern)).toBe('a pattern must not contain control characters (U+0000-U+001F, U+007F)');
    },
  );

  it("takes the workspace separator flowgate puts after a valid workspace name, and still compiles a pattern kept before control characters were refused", () => {
    expect(patternProblem('ws-a\u001fteam-*')).toBeUndefined();
    const kept = compilePattern('a\u0007*');
    expect(kept.matches('a\u0007b')).toBe(true);
    expect(kept.matches('ab')).toBe(false);
  });

  it('accepts 256 characters, counted as code points', () => {
    expect(patternProblem('x'.repeat(255) + '*')).toBeUndefined();
    expect(patternProblem('😀'.repeat(255) + '*')).toBeUndefined();
    expect(patternProblem('?')).toBeUndefined();
  });
});

/** An independent oracle: the glob as a regular expression over code points. */
function oracle(pattern: string): RegExp {
  let re = '';
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === '\\') re += escape(chars[++i]!);
    else if (c === '*') re += '.*';
    else if (c === '?') re += '.';
    else re += escape(c);
  }
  return new RegExp(`^${re}$`, 'su');
}
const escape = (c: string) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('property: the matcher agrees with a regular expression', () => {
  const alphabet = fc.constantFrom('a', 'b', '/', '-', '😀', '\n');
  const patternPart = fc.oneof(alphabet, fc.constant('*'), fc.constant('?'), alphabet.map((c) => `\\${c}`), fc.constant('\\*'));
  const patterns = fc.array(patternPart, { minLength: 1, maxLength: 8 }).map((p) => p.join(''))
    .filter((p) => patternProblem(p) === undefined);
  const names = fc.array(alphabet, { maxLength: 10 }).map((n) => n.join(''));

  it('on random patterns and names', () => {
    fc.assert(
      fc.property(patterns, names, (pattern, name) => {
        expect(compilePattern(pattern).matches(name)).toBe(oracle(pattern).test(name));
      }),
      { numRuns: 5000 },
    );
  });

  it('on names made to match (pattern wildcards filled in)', () => {
    fc.assert(
      fc.property(patterns, fc.array(names, { minLength: 8, maxLength: 8 }), (pattern, fills) => {
        let k = 0;
        const name = pattern.replace(/\\(.)|\*|\?/gsu, (m, lit: string | undefined) =>
          lit !== undefined ? lit : m === '*' ? fills[k++ % fills.length]! : [...(fills[k++ % fills.length]! + 'a')][0]!,
        );
        expect(compilePattern(pattern).matches(name)).toBe(true);
        expect(oracle(pattern).test(name)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('takes no exponential time on many stars', () => {
    const m = compilePattern('*a*a*a*a*a*a*a*a*a*a*b');
    const started = performance.now();
    expect(m.matches('a'.repeat(5000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(500);
  });
});
