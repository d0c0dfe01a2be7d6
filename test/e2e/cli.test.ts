import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 30_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('the flowgate command', () => {
  it('prints help and its version', async () => {
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/flowgate serve/);
    expect(help.stdout).toMatch(/convert-envoyfilter/);
    const version = await run(['--version']);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it("gives a subcommand's own help for --help after it", async () => {
    const users = await run(['users', '--help']);
    expect(users.code).toBe(0);
    expect(users.stdout).toMatch(/flowgate users list/);
    expect(users.stdout).not.toMatch(/convert-envoyfilter/);
    const copy = await run(['store', 'copy', '--help']);
    expect(copy.code).toBe(0);
    expect(copy.stdout).toMatch(/flowgate store copy --from sqlite:PATH \[--to postgres:/);
    const store = await run(['store']);
    expect(store.code).toBe(2);
    expect(store.stderr).toMatch(/flowgate store copy/);
  });

  it('refuses an unknown command', async () => {
    const r = await run(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/unknown command 'frobnicate'/);
  });

  it('stops at start-up on a wrong value, naming every wrong variable and echoing no secret', async () => {
    const r = await run(['serve'], { FLOWGATE_PORT: 'eighty', FLOWGATE_DEFAULT_PERMISSION: 'ALL', FLOWGATE_ADMIN_TOKEN: 'short-secret-value' });
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/FLOWGATE_PORT/);
    expect(r.stderr).toMatch(/FLOWGATE_DEFAULT_PERMISSION/);
    expect(r.stderr).toMatch(/FLOWGATE_ADMIN_TOKEN/);
    expect(r.stderr).not.toContain('short-secret-value');
  });

  it('stops with 78 on a setting found wrong only at start (a decision log file it cannot open)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flowgate-cli-'));
    try {
      const notADirectory = join(dir, 'file');
      writeFileSync(notADirectory, '');
      const r = await run(['serve'], {
        FLOWGATE_DB_PATH: join(dir, 'flowgate.db'),
        FLOWGATE_PORT: '0',
        FLOWGATE_METRICS_PORT: '0',
        FLOWGATE_UPSTREAM_URL: 'http://127.0.0.1:1',
        FLOWGATE_DECISION_LOG: 'file',
        FLOWGATE_DECISION_LOG_FILE: join(notADirectory, 'decisions.log'),
      });
      expect(r.stderr).toMatch(/FLOWGATE_DECISION_LOG_FILE: cannot append/);
      expect(r.code).toBe(78);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('an unreachable policy store is named, with its setting and without its password', async () => {
    const r = await run(['serve'], {
      FLOWGATE_DATABASE_URL: 'postgres://flowgate:s3cret-pw@127.0.0.1:1/flowgate',
      FLOWGATE_PORT: '0',
      FLOWGATE_METRICS_PORT: '0',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot open the policy store \(FLOWGATE_DATABASE_URL postgres:\/\/flowgate:\*\*\*@127\.0\.0\.1:1\/flowgate\): .*ECONNREFUSED/);
    expect(r.stderr).not.toContain('s3cret-pw');
  });
});
