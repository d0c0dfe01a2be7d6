import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Several flowgate processes started together on a new SQLite file (replicas of one pod, a restart
 * beside a running one): each must open it, the schema made once. Real processes, since SQLite's
 * locks are what is tested; each opens the store through src/store/database.ts, bundled for Node.
 */
const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '../..');
let dir: string;
let opener: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'fg-open-'));
  const bundle = join(dir, 'database.cjs');
  buildSync({ entryPoints: [join(ROOT, 'src/store/database.ts')], bundle: true, platform: 'node', format: 'cjs', external: ['better-sqlite3'], outfile: bundle, logLevel: 'error' });
  opener = join(dir, 'open.cjs');
  writeFileSync(
    opener,
    `const { openDatabase } = require(${JSON.stringify(bundle)});
const [path, at] = [process.argv[2], Number(process.argv[3])];
while (Date.now() < at) {}
try {
  const db = openDatabase(path);
  process.stdout.write(String(db.prepare('PRAGMA user_version').pluck().get()));
  db.close();
} catch (e) {
  process.stdout.write('FAILED ' + (e.code ?? '') + ' ' + e.message);
  process.exitCode = 1;
}
`,
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function openAt(path: string, at: number): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [opener, path, String(at)], { env: { ...process.env, NODE_PATH: join(ROOT, 'node_modules') }, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', fail);
    child.on('close', () => done(out));
  });
}

describe('opening a new SQLite store from several processes at once', () => {
  it('every process opens it, and the schema is made once', async () => {
    const outcomes: string[][] = [];
    for (let round = 0; round < 6; round++) {
      const path = join(dir, `store-${round}.db`);
      // Far enough ahead for every child to be loaded and spinning when the moment comes.
      const at = Date.now() + 700;
      outcomes.push(await Promise.all([openAt(path, at), openAt(path, at), openAt(path, at)]));
    }
    const versions = new Set(outcomes.flat());
    expect([...versions].filter((v) => v.startsWith('FAILED'))).toEqual([]);
    expect(versions.size).toBe(1);
  }, 60_000);
});
