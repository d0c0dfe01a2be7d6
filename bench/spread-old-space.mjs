// How much each way of copying an object and adding to it grows V8's old generation, on the running
// Node: 5 million copies after a warm-up, each way in a process of its own, with no full collection in the way. Run:
//   node --initial-old-space-size=300 --max-semi-space-size=8 --no-allocation-site-pretenuring bench/spread-old-space.mjs
import { execFileSync } from 'node:child_process';
import { getHeapSpaceStatistics } from 'node:v8';

const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space').space_used_size;
const source = { x: 1, y: 2 };
const more = { p: 1, q: 2 };
let sink;
const ways = {
  '{ ...a, b }': (i) => ({ ...source, b: i }),
  '{ ...a, ...b }': () => ({ ...source, ...more }),
  '{ ...a } then o.b =': (i) => {
    const o = { ...source };
    o.b = i;
    return o;
  },
  '{ b, ...a }': (i) => ({ b: i, ...source }),
  'Object.assign({}, a, { b })': (i) => Object.assign({}, source, { b: i }),
  'Object.assign(Object.create(null), a, { b })': (i) => Object.assign(Object.create(null), source, { b: i }),
  'fields written out': (i) => ({ x: source.x, y: source.y, b: i }),
};
const only = process.argv[2];
if (only === undefined) {
  console.log(`Node ${process.version}: old-space growth over 5M copies`);
  for (const name of Object.keys(ways)) process.stdout.write(execFileSync(process.execPath, [...process.execArgv, new URL(import.meta.url).pathname, name]));
} else {
  const make = ways[only];
  for (let i = 0; i < 2e5; i++) sink = make(i);
  const before = oldSpace();
  for (let i = 0; i < 5e6; i++) sink = make(i);
  console.log(`${only.padEnd(46)} ${((oldSpace() - before) / 1e6).toFixed(1)} MB`);
  if (sink === undefined) throw new Error('unreachable');
}
