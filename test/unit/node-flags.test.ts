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
  // A memory-reducing collection (V8 starts one when allocation slows, e.g. after a burst of load)
  // also let go of the optimized code of the hot request path: ~150 functions compiled again while the
  // requests ran unoptimized, on a core shared with the compiler threads, for seconds of p99 in the
  // hundreds of milliseconds (README, "Performance and memory").
  it('keeps V8 from throwing away compiled code when traffic calms down', () => {
    expect(flags).toContain('--no-memory-reducer');
  });
  // V8 turns a property read that has seen more than 4 object shapes into a slow generic look-up; an
  // ordinary user's mix of calls (runs, metrics, searches, artifacts) crossed that at many sites of
  // flowgate's and Node's HTTP code. Allowing 16: 5-8% less CPU per request (README, "Where the p99 goes").
  it('lets V8 keep property reads polymorphic up to 16 shapes', () => {
    expect(flags).toContain('--max-valid-polymorphic-map-count=16');
  });
  // With V8's helper threads, an old-generation collection marks on 4 threads beside the main one;
  // where flowgate has one core (a sidecar's CPU limit, the bench's pinned core) they take turns with
  // the requests, which stalled for 15-60 ms per full collection. Marked on the main thread in
  // steps, for about the same CPU, most rounds at half saturation lost those stalls (README,
  // "Full collections").
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
