import { afterEach, describe, expect, it, vi } from 'vitest';
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

/** What the CLI sent, when it sent anything: the URL and the Authorization header of each call. */
function recordCalls(): Array<{ url: string; authorization: string | null }> {
  const seen: Array<{ url: string; authorization: string | null }> = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    seen.push({ url, authorization: new Headers(init.headers).get('Authorization') });
    return new Response(JSON.stringify({ users: [] }), { status: 200, headers: { 'Content-Type': 'application/json' } });
  });
  return seen;
}

async function run(args: string[], env: Record<string, string>, files: Record<string, string> = {}): Promise<{ code: number; err: string; read: string[] }> {
  let err = '';
  const read: string[] = [];
  const io: Io = {
    env,
    out: () => undefined,
    err: (t) => void (err += t),
    readFile: async (path) => {
      read.push(path);
      if (path in files) return files[path]!;
      throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
    },
  };
  return { code: await runAdminCli(args[0]!, args.slice(1), io), err, read };
}

const admin = (uri: string) => ({ MLFLOW_TRACKING_URI: uri, MLFLOW_TRACKING_USERNAME: 'admin', MLFLOW_TRACKING_PASSWORD: 'fgt_admin-token' });
const basicOf = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('an administrator password over plain http', () => {
  afterEach(() => vi.unstubAllGlobals());

  it('is refused to a host that is not loopback, before anything is sent, saying why and how', async () => {
    const seen = recordCalls();
    for (const uri of ['http://mlflow.corp.example.com', 'http://10.0.0.7:8080/mlflow/', 'http://[2001:db8::1]/', 'http://128.0.0.1/']) {
      const r = await run(['users', 'list'], admin(uri));
      expect(r.code, uri).toBe(2);
      expect(r.err).toMatch(/refusing to send admin's password over plain http:\/\/ to .*use https:\/\/, or pass --allow-plain-http/);
      expect(r.err).not.toContain('fgt_admin-token');
    }
    expect(seen).toEqual([]);
  });

  it('goes to a loopback host, over https anywhere, and elsewhere only with --allow-plain-http', async () => {
    const seen = recordCalls();
    for (const uri of ['http://localhost:5000', 'http://127.0.0.1:8080/', 'http://127.8.9.10/', 'http://[::1]:8080', 'https://mlflow.corp.example.com'])
      expect((await run(['users', 'list'], admin(uri))).code, uri).toBe(0);
    expect((await run(['users', 'list', '--allow-plain-http'], admin('http://mlflow.corp.example.com'))).code).toBe(0);
    expect(seen.map((s) => new URL(s.url).host)).toEqual(['localhost:5000', '127.0.0.1:8080', '127.8.9.10', '[::1]:8080', 'mlflow.corp.example.com', 'mlflow.corp.example.com']);
    expect(seen.every((s) => s.authorization === basicOf('admin', 'fgt_admin-token'))).toBe(true);
  });
});

describe('--password-file', () => {
  afterEach(() => vi.unstubAllGlobals());
  const noPassword = { MLFLOW_TRACKING_URI: 'https://ml.example.com', MLFLOW_TRACKING_USERNAME: 'admin' };

  it('reads the password from the file (or stdin with -), without its trailing newline, over MLFLOW_TRACKING_PASSWORD', async () => {
    const seen = recordCalls();
    expect((await run(['users', 'list', '--password-file', '/run/secrets/pw'], noPassword, { '/run/secrets/pw': 'fgt_from-file\n' })).code).toBe(0);
    const stdin = await run(['users', 'list', '--password-file', '-'], { ...noPassword, MLFLOW_TRACKING_PASSWORD: 'not-this-one' }, { '-': 'fgt_from-stdin\r\n' });
    expect(stdin.code).toBe(0);
    expect(stdin.read).toEqual(['-']);
    expect(seen.map((s) => s.authorization)).toEqual([basicOf('admin', 'fgt_from-file'), basicOf('admin', 'fgt_from-stdin')]);
  });

  it('is a usage error when missing, empty, given with --password, or sharing stdin with a FILE argument', async () => {
    const seen = recordCalls();
    const missing = await run(['users', 'list', '--password-file', '/nope'], noPassword);
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.err).toMatch(/cannot read the password file \/nope: ENOENT/);
    const empty = await run(['users', 'list', '--password-file', '/empty'], noPassword, { '/empty': '\n' });
    expect(empty.code).toBe(2);
    expect(empty.err).toMatch(/the password file \/empty is empty/);
    const both = await run(['users', 'list', '--password', 'x', '--password-file', '/pw'], noPassword, { '/pw': 'y' });
    expect(both.code).toBe(2);
    expect(both.err).toMatch(/--password or --password-file, not both/);
    const { runPolicy } = await import('../../src/commands/policy.js');
    let err = '';
    const io: Io = { env: noPassword, out: () => undefined, err: (t) => void (err += t), readFile: () => Promise.reject(new Error('stdin read once only')) };
    expect(await runPolicy(['apply', '-', '--password-file', '-'], io)).toBe(2);
    expect(err).toMatch(/stdin cannot carry both/);
    expect(seen).toEqual([]);
  });

  it('the help steers to MLFLOW_TRACKING_PASSWORD and --password-file, and says why not --password', async () => {
    let out = '';
    await runAdminCli('users', ['--help'], { env: {}, out: (t) => void (out += t), err: () => undefined, readFile: () => Promise.reject(new Error('none')) });
    expect(out).toMatch(/MLFLOW_TRACKING_PASSWORD/);
    expect(out).toMatch(/--password-file PATH \(- reads stdin\)/);
    expect(out).toMatch(/--password TOKEN works too, but every local user can read it in the process list \(ps\)/);
    expect(out).toMatch(/--allow-plain-http/);
  });
});
