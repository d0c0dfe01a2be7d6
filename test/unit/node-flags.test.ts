import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');
const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; flowgate: { nodeFlags: string[] } };
const flags = pkg.flowgate.nodeFlags;

// The benchmark runs flowgate with package.json's flags; every way of starting it must use the same ones.
// What each flag does and when to drop it: docs/performance.md, "Node flags".
describe('Node flags flowgate ships with', () => {
  it('caps the young generation', () => {
    expect(flags).toContain('--max-semi-space-size=8');
  });
  // V8 otherwise may start allocating per-request objects straight in the old generation under load.
  it('keeps V8 from pretenuring per-request objects', () => {
    expect(flags).toContain('--no-allocation-site-pretenuring');
  });
  // A memory-reducing collection after a burst also dropped the hot path's optimized code.
  it('keeps V8 from throwing away compiled code when traffic calms down', () => {
    expect(flags).toContain('--no-memory-reducer');
  });
  // The mixed calls of an ordinary user push many property reads past V8's default of 4 shapes.
  it('lets V8 keep property reads polymorphic up to 16 shapes', () => {
    expect(flags).toContain('--max-valid-polymorphic-map-count=16');
  });
  // On one core, V8's marking helper threads take turns with the requests and stall them.
  it('collects garbage on the main thread only', () => {
    expect(flags).toContain('--single-threaded-gc');
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
