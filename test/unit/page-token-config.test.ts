import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { openSqliteStore } from '../../src/store/database.js';
import { storedPageTokenKey } from '../../src/proxy/after/page-token-key.js';

const b64 = (n = 32) => randomBytes(n).toString('base64');

function problemsOf(env: Record<string, string>, readFile?: (p: string) => string): string[] {
  try {
    loadConfig(env, readFile);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
}

describe('page token keys in the config', () => {
  it('are unset by default (the store keeps one)', () => {
    const c = loadConfig({});
    expect(c.pageTokenKeys.current).toBeUndefined();
    expect(c.pageTokenKeys.previous).toEqual([]);
  });

  it('read the key, from the variable or a file, and the previous keys', () => {
    const k = b64();
    const [p1, p2] = [b64(), b64()];
    const c = loadConfig({ FLOWGATE_PAGE_TOKEN_KEY: k, FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS: `${p1}, ${p2}` });
    expect(c.pageTokenKeys.current?.toString('base64')).toBe(k);
    expect(c.pageTokenKeys.previous.map((b) => b.toString('base64'))).toEqual([p1, p2]);
    const fromFile = loadConfig({ FLOWGATE_PAGE_TOKEN_KEY_FILE: '/run/secrets/page-key' }, () => `${k}\n`);
    expect(fromFile.pageTokenKeys.current?.toString('base64')).toBe(k);
  });

  it('collect every problem with the other settings', () => {
    const problems = problemsOf({
      FLOWGATE_PAGE_TOKEN_KEY: b64(16),
      FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS: `${b64()},not-base64!`,
      FLOWGATE_METRICS_PORT: '8080',
      FLOWGATE_PORT: '8080',
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^FLOWGATE_PAGE_TOKEN_KEY: must be the base64 of 32/),
        expect.stringMatching(/^FLOWGATE_PAGE_TOKEN_PREVIOUS_KEYS: key 2 must be/),
        expect.stringMatching(/^FLOWGATE_METRICS_PORT/),
      ]),
    );
    expect(problemsOf({ FLOWGATE_PAGE_TOKEN_KEY: b64(), FLOWGATE_PAGE_TOKEN_KEY_FILE: '/k' }, () => b64())).toEqual([
      'FLOWGATE_PAGE_TOKEN_KEY_FILE: set either it or FLOWGATE_PAGE_TOKEN_KEY, not both',
    ]);
    expect(problemsOf({ FLOWGATE_PAGE_TOKEN_KEY_FILE: '/k' }, () => { throw new Error('ENOENT'); })).toEqual([
      'FLOWGATE_PAGE_TOKEN_KEY_FILE: cannot read the file',
    ]);
  });

  it('never appear in a problem message', () => {
    const short = b64(31);
    expect(problemsOf({ FLOWGATE_PAGE_TOKEN_KEY: short }).join('\n')).not.toContain(short);
  });
});

describe('the stored page token key', () => {
  it('is made once and then kept', async () => {
    const sql = openSqliteStore(':memory:');
    const first = await storedPageTokenKey(sql);
    expect(first.length).toBe(32);
    expect((await storedPageTokenKey(sql)).equals(first)).toBe(true);
    await sql.close();
  });
});
