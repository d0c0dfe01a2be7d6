import { describe, expect, it } from 'vitest';
import { InferenceConfigError } from '../../src/inference/document.js';
import { parseKeyFile, parseKeyList } from '../../src/inference/key-file.js';

function problemsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(InferenceConfigError);
    return [...(e as InferenceConfigError).problems];
  }
  throw new Error('expected rejection');
}

const SECRET = 'very-secret-key-value-0001';

describe('inference key file', () => {
  it('keeps only digests and scopes in memory', () => {
    const [key] = parseKeyFile(`keys:\n  - id: a\n    value: ${SECRET}\n    routes: [iris]\n    models: [iris, iris-v2]\n`, 'keys.yaml');
    expect(key!.id).toBe('a');
    expect(key!.digest).toHaveLength(32);
    expect([...key!.routes!]).toEqual(['iris']);
    expect([...key!.models!]).toEqual(['iris', 'iris-v2']);
    expect(JSON.stringify(key)).not.toContain(SECRET);
  });

  it('accepts an empty list, so that the last key can be revoked', () => {
    expect(parseKeyFile('keys: []', 'keys.yaml')).toEqual([]);
  });

  it.each([
    ['neither value nor sha256', 'keys:\n  - id: a', /keys\[0\]: set exactly one of value and sha256/],
    ['both value and sha256', `keys:\n  - id: a\n    value: ${SECRET}\n    sha256: "${'0'.repeat(64)}"`, /keys\[0\]: set exactly one of value and sha256/],
    ['a short key', 'keys:\n  - id: a\n    value: short', /keys\[0\]\.value: must be 8 to 1024 visible ASCII characters/],
    ['a key with a comma', 'keys:\n  - id: a\n    value: "abc,defghijk"', /keys\[0\]\.value: must be 8 to 1024/],
    ['a key with a space', 'keys:\n  - id: a\n    value: "abc defghijk"', /keys\[0\]\.value: must be 8 to 1024/],
    ['a bad sha256', 'keys:\n  - id: a\n    sha256: abc', /keys\[0\]\.sha256: expected 64 hex characters/],
    ['an unquoted all-digit sha256', `keys:\n  - id: a\n    sha256: ${'1'.repeat(64)}`, /keys\[0\]\.sha256: expected a quoted string of 64 hex characters/],
    ['an unquoted numeric key', 'keys:\n  - id: a\n    value: 123456789012', /keys\[0\]\.value: expected a string; quote keys/],
    ['a bad id', `keys:\n  - id: "a b"\n    value: ${SECRET}`, /keys\[0\]\.id: expected a short name/],
    ['an unknown field', `keys:\n  - id: a\n    value: ${SECRET}\n    route: [iris]`, /keys\[0\]: an unknown field .*; the fields here are id, value, sha256, routes, models$/],
    ['an unknown top-level field', `key: []`, /\(top level\): an unknown field .*; the fields here are keys$/],
    ['a top-level list', `- id: a\n  value: ${SECRET}`, /\(top level\): /],
  ])('rejects %s', (_label, text, message) => {
    expect(problemsOf(() => parseKeyFile(text, 'keys.yaml')).join('\n')).toMatch(message);
  });

  it('rejects duplicate ids, a key given twice and unknown routes, naming ids but never the key', () => {
    const problems = problemsOf(() =>
      parseKeyFile(
        `keys:
  - { id: a, value: ${SECRET} }
  - { id: a, value: ${SECRET}-2 }
  - { id: c, value: ${SECRET}, routes: [iris, nosuch] }
`,
        'keys.yaml',
        new Set(['iris']),
      ),
    );
    expect(problems).toEqual([
      'keys[1].id: duplicate id "a"',
      'keys[2]: same key as "a"; give each key once with all its routes',
      'keys[2].routes: no route is named "nosuch"',
    ]);
    expect(problems.join()).not.toContain('very-secret');
  });

  // A typo that makes the key part of a field name: the unknown field is described, never quoted.
  it.each([
    ['no space after the colon', `keys:\n  - { id: new, value:${SECRET} }\n`],
    ['the colon forgotten', `keys:\n  - { id: new, value ${SECRET} }\n`],
    ['value: forgotten', `keys:\n  - { id: new, ${SECRET} }\n`],
    ['value: forgotten, a key that reads as a name', 'keys:\n  - { id: new, Zq9sEcretKey0123 }\n'],
    ['value: forgotten in JSON', `{"keys":[{"id":"new","${SECRET}"}]}`],
  ])('never echoes a key that a typo made a field name: %s', (_label, text) => {
    const problems = problemsOf(() => parseKeyFile(text, 'keys.yaml')).join('\n');
    expect(problems).not.toMatch(/very-secret|Zq9s/);
    expect(problems).toMatch(/keys\[0\]: an unknown field \(not named, as it may hold a key\)/);
  });

  it('never echoes an invalid key value in its message', () => {
    const problems = problemsOf(() => parseKeyFile('keys:\n  - id: a\n    value: "secret with spaces"', 'keys.yaml'));
    expect(problems.join()).not.toContain('secret with');
  });

  it('reads comma-separated keys from an environment value', () => {
    const keys = parseKeyList(` ${SECRET} , ${SECRET}-2 ,`);
    expect(keys.map((k) => k.id)).toEqual(['env-1', 'env-2']);
    expect(keys.every((k) => k.routes === undefined && k.models === undefined)).toBe(true);
    expect(problemsOf(() => parseKeyList(`${SECRET},short`))).toEqual(['key 2: must be 8 to 1024 visible ASCII characters, without spaces or commas']);
  });
});
