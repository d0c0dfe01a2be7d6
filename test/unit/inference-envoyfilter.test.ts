import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runConvertEnvoyFilter, type ConvertIo } from '../../src/inference/convert-cli.js';
import { convertEnvoyFilter } from '../../src/inference/envoyfilter.js';
import { checkApiKey, digestKey } from '../../src/inference/api-key.js';
import { parseKeyFile } from '../../src/inference/key-file.js';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/inference/${name}`, import.meta.url), 'utf8');
const SPEC_FILTER = fixture('envoyfilter-api-key.yaml');
const SPEC_KEY = 'Zp3u9Lr2-mQx7VbT4kW1sYhN8cJ6dF0a';

const lua = (code: string, field = 'inlineCode') => `
apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: { name: api-key-filter, namespace: istio-system }
spec:
  configPatches:
    - applyTo: HTTP_FILTER
      patch:
        operation: INSERT_BEFORE
        value:
          name: envoy.filters.http.lua
          typed_config:
            ${field}: |
${code
  .split('\n')
  .map((l) => `              ${l}`)
  .join('\n')}
`;

describe('EnvoyFilter conversion', () => {
  it('turns the spec-shaped api-key-filter into a key file that accepts the same key', () => {
    const result = convertEnvoyFilter(SPEC_FILTER);
    expect(result.source).toEqual({ name: 'api-key-filter', namespace: 'istio-system' });
    expect(result.keyFile).toEqual({ keys: [{ id: 'envoyfilter-api-key-filter', value: SPEC_KEY }] });
    expect(result.warnings).toEqual([]);
    const keys = parseKeyFile(JSON.stringify(result.keyFile), 'converted');
    expect(checkApiKey(['x-api-key', SPEC_KEY], keys, { route: 'iris', model: undefined }).ok).toBe(true);
  });

  it('can scope the key, rename it, and keep only its digest', () => {
    const result = convertEnvoyFilter(SPEC_FILTER, { id: 'legacy', routes: ['iris'], hashOnly: true });
    expect(result.keyFile).toEqual({
      keys: [{ id: 'legacy', sha256: createHash('sha256').update(SPEC_KEY).digest('hex'), routes: ['iris'] }],
    });
    expect(JSON.stringify(result.keyFile)).not.toContain(SPEC_KEY);
  });

  it('reads a kubectl List, the default_source_code spelling and a direct header comparison', () => {
    const result = convertEnvoyFilter(fixture('envoyfilter-list.yaml'));
    expect(result.keyFile.keys[0]).toMatchObject({ value: 'short-key-123' });
    expect(result.warnings).toEqual([expect.stringMatching(/13 characters long; rotate/)]);
  });

  it.each([
    ['local, double quotes', 'local api_key = "abcdefgh-1234"', 'abcdefgh-1234'],
    ['global, single quotes', "api_key='abcdefgh-1234'", 'abcdefgh-1234'],
    ['long bracket string', 'local api_key = [[abcdefgh-1234]]', 'abcdefgh-1234'],
    ['long bracket with level', 'local api_key = [==[abc]]def-1234]==]', 'abc]]def-1234'],
    ['escaped quote', 'local api_key = "abc\\"defgh-1234"', 'abc"defgh-1234'],
  ])('finds the key: %s', (_label, code, key) => {
    expect(convertEnvoyFilter(lua(code)).keyFile.keys[0]).toMatchObject({ value: key });
  });

  it('reads the inline_code spelling', () => {
    expect(convertEnvoyFilter(lua('local api_key = "abcdefgh-1234"', 'inline_code')).keyFile.keys[0]).toMatchObject({ value: 'abcdefgh-1234' });
  });

  it.each([
    ['not YAML', 'kind: [', /not valid YAML/],
    ['no EnvoyFilter', 'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: x }', /no resource of kind EnvoyFilter/],
    ['no patches', 'kind: EnvoyFilter\nmetadata: { name: api-key-filter }\nspec: {}', /no spec\.configPatches list/],
    ['no Lua', lua('', 'other'), /has no Lua filter with inline code/],
    ['no key literal', lua('local api_key = os.getenv("API_KEY")'), /assigns no string literal to api_key/],
    ['a comparison only', lua('if api_key == "x" then end'), /assigns no string literal/],
    ['two keys', lua('local api_key = "abcdefgh-1"\napi_key = "abcdefgh-2"'), /holds 2 different keys/],
    ['a key flowgate cannot take', lua('local api_key = "has space 123"'), /not 8 to 1024 visible ASCII/],
    ['an escape sequence', lua('local api_key = "abc\\ndefgh"'), /Lua escape sequence/],
  ])('fails clearly on %s', (_label, text, message) => {
    expect(() => convertEnvoyFilter(text)).toThrow(message);
  });

  it('picks api-key-filter among several filters and refuses to guess otherwise', () => {
    const two = `${lua('local api_key = "abcdefgh-1"').replace('api-key-filter', 'one')}\n---\n${lua('local api_key = "abcdefgh-2"').replace('api-key-filter', 'two')}`;
    expect(() => convertEnvoyFilter(two)).toThrow(/several EnvoyFilters \(one, two\) and none is named api-key-filter/);
    expect(convertEnvoyFilter(two, { filterName: 'two' }).keyFile.keys[0]).toMatchObject({ value: 'abcdefgh-2' });
  });

  it('never puts the key in an error message', () => {
    for (const code of ['local api_key = "has space 123"', 'local api_key = "abcdefgh-1"\napi_key = "abcdefgh-2"']) {
      try {
        convertEnvoyFilter(lua(code));
        throw new Error('expected failure');
      } catch (e) {
        expect((e as Error).message).not.toMatch(/has space|abcdefgh/);
      }
    }
  });
});

function fakeIo(files: Record<string, string> = {}, stdin = '') {
  const out = { stdout: '', stderr: '' };
  const io: ConvertIo = {
    readFile: async (p) => {
      if (!(p in files)) throw Object.assign(new Error('nope'), { code: 'ENOENT' });
      return files[p]!;
    },
    readStdin: async () => stdin,
    stdout: (t) => void (out.stdout += t),
    stderr: (t) => void (out.stderr += t),
  };
  return { io, out };
}

describe('flowgate convert-envoyfilter', () => {
  it('prints the key file', async () => {
    const { io, out } = fakeIo({ 'filter.yaml': SPEC_FILTER });
    expect(await runConvertEnvoyFilter(['filter.yaml'], io)).toBe(0);
    expect(parse(out.stdout)).toEqual({ keys: [{ id: 'envoyfilter-api-key-filter', value: SPEC_KEY }] });
    expect(out.stderr).toBe('');
  });

  it('prints a Secret when asked, reading stdin', async () => {
    const { io, out } = fakeIo({}, SPEC_FILTER);
    expect(await runConvertEnvoyFilter(['-', '--secret', 'flowgate-inference-keys', '--namespace', 'models', '--routes', 'iris,fraud', '--sha256'], io)).toBe(0);
    const secret = parse(out.stdout);
    expect(secret).toMatchObject({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'flowgate-inference-keys', namespace: 'models' }, type: 'Opaque' });
    const keys = parseKeyFile(secret.stringData['keys.yaml'], 'secret', new Set(['iris', 'fraud']));
    expect(checkApiKey(['x-api-key', SPEC_KEY], keys, { route: 'fraud', model: undefined }).ok).toBe(true);
    expect(out.stdout).not.toContain(SPEC_KEY);
  });

  it.each([
    [[], 2, /expected exactly one input file/],
    [['a.yaml', 'b.yaml'], 2, /expected exactly one input file/],
    [['--bogus', 'a.yaml'], 2, /Unknown option '--bogus'/],
    [['a.yaml', '--routes', 'Bad Name'], 2, /--routes: "Bad Name" is not a valid route name/],
    [['a.yaml', '--namespace', 'x'], 2, /--namespace only applies together with --secret/],
    [['missing.yaml'], 1, /cannot read missing\.yaml: ENOENT/],
    [['a.yaml'], 1, /convert-envoyfilter: the input holds no resource of kind EnvoyFilter/],
    [['a.yaml', '--id', 'has space'], 1, /convert-envoyfilter: id: expected a short name/],
  ])('%j exits %i', async (argv, code, message) => {
    const { io, out } = fakeIo({ 'a.yaml': 'kind: ConfigMap\n' });
    if (argv.includes('--id')) Object.assign(io, { readFile: async () => SPEC_FILTER });
    expect(await runConvertEnvoyFilter(argv, io)).toBe(code);
    expect(out.stderr).toMatch(message);
    expect(out.stdout).toBe('');
  });

  it('prints a key file (and a Secret) that flowgate reads back as the same key, whatever its characters', async () => {
    // Lua-escaped in the filter, then YAML-quoted in the output: both escapings must round-trip.
    const ch = fc.constantFrom(...'!"#$%&\'()*+-./0123456789:;<=>?@ABCZ[\\]^_`abcz{|}~'.split(''));
    const filter = (key: string) => lua(`local api_key = '${key.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`);
    await fc.assert(
      fc.asyncProperty(fc.array(ch, { minLength: 8, maxLength: 16 }).map((a) => a.join('')), async (key) => {
        for (const secret of [false, true]) {
          const { io, out } = fakeIo({}, filter(key));
          expect(await runConvertEnvoyFilter(['-', ...(secret ? ['--secret', 's'] : [])], io)).toBe(0);
          const text = secret ? (parse(out.stdout) as { stringData: Record<string, string> }).stringData['keys.yaml']! : out.stdout;
          const [k] = parseKeyFile(text, 'keys.yaml');
          expect(k!.digest.equals(digestKey(key))).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('prints usage on --help', async () => {
    const { io, out } = fakeIo();
    expect(await runConvertEnvoyFilter(['--help'], io)).toBe(0);
    expect(out.stdout).toMatch(/^usage: flowgate convert-envoyfilter/);
  });
});
