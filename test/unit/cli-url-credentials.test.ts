import { describe, expect, it } from 'vitest';
import type { Io } from '../../src/commands/admin-cli/output.js';
import { runAdminCli } from '../../src/commands/admin-cli/run.js';
import { shownUrl } from '../../src/shown-url.js';

/** The admin CLI and the logs never print a password or token that came inside a URL. */
async function cli(args: string[], env: Record<string, string>): Promise<{ code: number; out: string }> {
  let out = '';
  const io: Io = { env, out: (t) => void (out += t), err: (t) => void (out += t), readFile: () => Promise.reject(new Error('no files here')) };
  return { code: await runAdminCli(args[0]!, args.slice(1), io), out };
}

describe('credentials inside URLs', () => {
  it('the CLI refuses a tracking URI that carries them, without printing them', async () => {
    const r = await cli(['users', 'list'], { MLFLOW_TRACKING_URI: 'https://alice:fgt_secret-in-url-0123456789@ml.example.com', MLFLOW_TRACKING_USERNAME: 'alice', MLFLOW_TRACKING_PASSWORD: 'x' });
    expect(r.code).toBe(2);
    expect(r.out).toMatch(/must not carry a user name or password/);
    expect(r.out).not.toContain('secret-in-url');
    const bad = await cli(['users', 'list'], { MLFLOW_TRACKING_URI: 'ftp://alice:fgt_secret-in-url-0123456789@ml', MLFLOW_TRACKING_USERNAME: 'alice', MLFLOW_TRACKING_PASSWORD: 'x' });
    expect(bad.code).toBe(2);
    expect(bad.out).not.toContain('secret-in-url');
  });

  it('a URL shown in a line has its password and a password parameter masked, and one that does not parse is not shown', () => {
    expect(shownUrl('http://svc:pa55@mlflow:5000/')).toBe('http://svc:***@mlflow:5000');
    expect(shownUrl('postgres://u@db/flowgate?sslmode=require&password=pa55')).toBe('postgres://u@db/flowgate?sslmode=require&password=***');
    expect(shownUrl('not a url with pa55', 'hidden')).toBe('hidden');
  });
});
