import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type Env } from '../../src/config.js';

/** The problems loadConfig reports for `env`, read with `readFile` (the real file system by default). */
function problemsOf(env: Env, readFile?: (path: string) => string): string[] {
  try {
    loadConfig(env, readFile);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error('loadConfig accepted the configuration');
}

const failing = (code: string) => () => {
  throw Object.assign(new Error(`${code}: some words`), { code });
};

describe('FLOWGATE_ADMIN_TOKEN_FILE that cannot be read', () => {
  const dir = mkdtempSync(join(tmpdir(), 'fg-token-file-'));

  it('names the missing path and says it does not exist, as the only problem', () => {
    const path = join(dir, 'no-such-token');
    expect(problemsOf({ FLOWGATE_ADMIN_USERNAME: 'admin', FLOWGATE_ADMIN_TOKEN_FILE: path })).toEqual([
      `FLOWGATE_ADMIN_TOKEN_FILE: ${path} does not exist`,
    ]);
  });

  it('says a file that cannot be read cannot be read (permission denied), as the only problem', () => {
    // Running as root reads any mode, so the refusal is the file system's error code itself.
    expect(problemsOf({ FLOWGATE_ADMIN_USERNAME: 'admin', FLOWGATE_ADMIN_TOKEN_FILE: '/run/secrets/admin' }, failing('EACCES'))).toEqual([
      'FLOWGATE_ADMIN_TOKEN_FILE: /run/secrets/admin cannot be read (permission denied)',
    ]);
  });

  it('says a directory is not a file', () => {
    expect(problemsOf({ FLOWGATE_ADMIN_USERNAME: 'admin', FLOWGATE_ADMIN_TOKEN_FILE: dir })).toEqual([
      `FLOWGATE_ADMIN_TOKEN_FILE: ${dir} is a directory, not a file`,
    ]);
  });

  it('adds no shadow-mode or pairing problem on top of the read failure', () => {
    const path = join(dir, 'absent');
    const problems = problemsOf({ FLOWGATE_ADMIN_TOKEN_FILE: path, FLOWGATE_ENFORCE: 'false' });
    expect(problems).toEqual([`FLOWGATE_ADMIN_TOKEN_FILE: ${path} does not exist`]);
    expect(problems.join('\n')).not.toMatch(/at least 32|FLOWGATE_ADMIN_USERNAME|FLOWGATE_ENFORCE/);
  });

  it('keeps the other problems of the configuration', () => {
    const problems = problemsOf({ FLOWGATE_ADMIN_TOKEN_FILE: join(dir, 'absent'), FLOWGATE_PORT: '9090', FLOWGATE_METRICS_PORT: '9090' });
    expect(problems).toHaveLength(2);
    expect(problems[1]).toMatch(/^FLOWGATE_METRICS_PORT:/);
  });

  it('still says a readable but short token is too short, without echoing it', () => {
    const path = join(dir, 'short');
    writeFileSync(path, 'short-secret\n');
    const problems = problemsOf({ FLOWGATE_ADMIN_USERNAME: 'admin', FLOWGATE_ADMIN_TOKEN_FILE: path });
    expect(problems).toEqual(['FLOWGATE_ADMIN_TOKEN_FILE: the token must be at least 32 characters']);
    expect(problems.join('\n')).not.toContain('short-secret');
  });
});
