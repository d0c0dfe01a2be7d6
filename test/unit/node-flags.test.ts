import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; flowgate: { nodeFlags: string[] } };
const flags = pkg.flowgate.nodeFlags;

// The benchmark runs flowgate with package.json's flags; every way of starting it must use the same ones.
describe('Node flags flowgate ships with', () => {
  it('caps the young generation', () => {
    expect(flags).toContain('--max-semi-space-size=8');
  });
  // V8 sometimes decides, early under load, that per-request objects live long and allocates them
  // straight in the old generation from then on: 3-4 ms scavenges and old-space churn that ends in
  // long mark-compacts (README, "Performance and memory").
  it('keeps V8 from pretenuring per-request objects', () => {
    expect(flags).toContain('--no-allocation-site-pretenuring');
  });
  // V8 grows the old generation up to 4x its live size between full collections when the heap
  // limit is large (the default on a big host): under sustained load flowgate's RSS then climbed
  // past 160 MB before the first one. A limit under 2 GB lowers that factor (1.4 at 512 MB).
  it('bounds how far the old generation grows between full collections', () => {
    const limit = Number(execFileSync(process.execPath, [...flags, '-p', 'v8.getHeapStatistics().heap_size_limit'], { encoding: 'utf8' }));
    expect(limit / 2 ** 20).toBeGreaterThan(512);
    expect(limit / 2 ** 20).toBeLessThan(600);
  });
  it('are the Dockerfile entrypoint flags', () => {
    const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'))?.[1];
    expect(JSON.parse(entrypoint!)).toEqual(['node', ...flags, 'dist/cli.js']);
  });
  it('are what npm start and the quickstart run', () => {
    expect(pkg.scripts.start).toBe(`node ${flags.join(' ')} dist/cli.js serve`);
    expect(read('scripts/quickstart.sh')).toContain(`node ${flags.join(' ')} dist/cli.js serve`);
  });
});
