// The cost of a decision with pattern grants: the index look-up for the resource's name, composing
// its answer with the resource's own grants, and decide(). 1,000 pattern grants held by 100 users and
// 100 groups, 10,000 distinct names; "cold" is a name's first look-up since the index was (re)loaded,
// "warm" one answered from the index's cache. Each call is timed on its own; the clock's own cost is
// measured and shown beside the figures. Run `npm run build` first (it imports dist/).
//
//   node bench/pattern-decision.mjs [--rounds 5] [--warm-calls 200000] [--seed 1]
import { parseArgs } from 'node:util';
import { decide } from '../dist/authz/decide.js';
import { withPatterns } from '../dist/authz/pattern-facts.js';
import { createPatternIndex } from '../dist/authz/pattern-index.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '5' },
    'warm-calls': { type: 'string', default: '200000' },
    seed: { type: 'string', default: '1' },
  },
});
const ROUNDS = Number(args.rounds);
const WARM_CALLS = Number(args['warm-calls']);

/** A small seeded generator, so two runs measure the same workload. */
function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = mulberry32(Number(args.seed));
const pick = (list) => list[Math.floor(random() * list.length)];
const PERMISSIONS = ['NO_PERMISSIONS', 'READ', 'EDIT', 'MANAGE'];

const USERS = 100;
const GROUPS = 100;
const TEAMS = 50;
const PROJECTS = 20;

// Names as teams lay them out: team/project/run, some with a stage suffix.
const names = new Set();
while (names.size < 10_000) {
  const stage = pick(['', '', '', '-dev', '-prod', '-staging']);
  names.add(`team-${Math.floor(random() * TEAMS)}/proj-${Math.floor(random() * PROJECTS)}/run-${Math.floor(random() * 1000)}${stage}`);
}
const NAMES = [...names];

// Mostly team- and project-wide patterns; a few match anywhere (empty literal prefix), so every
// look-up tests those.
const patternShapes = [
  [40, () => `team-${Math.floor(random() * TEAMS)}/*`],
  [40, () => `team-${Math.floor(random() * TEAMS)}/proj-${Math.floor(random() * PROJECTS)}/*`],
  [10, () => `team-${Math.floor(random() * TEAMS)}/proj-?/run-*${pick(['-dev', '-prod'])}`],
  [8, () => `team-${Math.floor(random() * TEAMS)}/*/run-${Math.floor(random() * 10)}*`],
  [2, () => `*${pick(['-prod', '-staging', '/run-1*', '/proj-3/*'])}`],
];
const shapeTotal = patternShapes.reduce((n, [w]) => n + w, 0);
function randomPattern() {
  let r = random() * shapeTotal;
  for (const [w, make] of patternShapes) if ((r -= w) < 0) return make();
  return patternShapes[0][1]();
}

const grants = new Map();
while (grants.size < 1_000) {
  const asGroup = random() < 0.5;
  const grantee = { type: asGroup ? 'group' : 'user', id: 1 + Math.floor(random() * (asGroup ? GROUPS : USERS)) };
  const pattern = randomPattern();
  grants.set(`${grantee.type}:${grantee.id}:${pattern}`, { kind: 'experiment', pattern, grantee, permission: pick(PERMISSIONS) });
}
const GRANTS = [...grants.values()];
const emptyPrefix = GRANTS.filter((g) => g.pattern.startsWith('*')).length;

// Each user in three groups.
const groupsOf = Array.from({ length: USERS + 1 }, () => [1, 2, 3].map(() => 1 + Math.floor(random() * GROUPS)));
const NO_GRANTS = Object.freeze({ direct: undefined, groups: Object.freeze([]) });
// One resource in twenty has a grant of its own for the caller.
const resourceFacts = () => (random() < 0.05 ? { direct: pick(PERMISSIONS), groups: [] } : NO_GRANTS);

const index = createPatternIndex(GRANTS, { cacheSize: 10_000 });
let sink = 0;

function decision(name, userId, facts, need) {
  const patterns = index.factsFor('experiment', name, userId, groupsOf[userId]);
  const d = decide({
    isAdmin: false,
    need,
    facts: [withPatterns(facts, patterns)],
    defaultPermission: 'NO_PERMISSIONS',
    createRequiresAdmin: false,
  });
  return d.allow ? 1 : 0;
}

/** Per-call nanoseconds of `calls` calls, arguments drawn before the clock starts. */
function timed(calls, draw) {
  const samples = new Float64Array(calls);
  const argsList = Array.from({ length: calls }, draw);
  for (let i = 0; i < calls; i++) {
    const [name, userId, facts, need] = argsList[i];
    const t0 = process.hrtime.bigint();
    sink += decision(name, userId, facts, need);
    samples[i] = Number(process.hrtime.bigint() - t0);
  }
  return samples;
}

function clockCost(calls) {
  const samples = new Float64Array(calls);
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    samples[i] = Number(process.hrtime.bigint() - t0);
  }
  return samples;
}

const shuffled = () => {
  const a = [...NAMES];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
};
const drawCall = (name) => [name, 1 + Math.floor(random() * USERS), resourceFacts(), pick(['read', 'read', 'read', 'edit', 'manage'])];

function coldRound() {
  index.reload(GRANTS);
  const order = shuffled();
  return timed(order.length, (_, i) => drawCall(order[i]));
}

function concat(arrays) {
  const out = new Float64Array(arrays.reduce((n, a) => n + a.length, 0));
  let at = 0;
  for (const a of arrays) {
    out.set(a, at);
    at += a.length;
  }
  return out;
}

function stats(samples) {
  const s = Float64Array.from(samples).sort();
  const at = (q) => s[Math.min(s.length - 1, Math.floor(q * s.length))] / 1000;
  return { calls: s.length, p50: at(0.5), p99: at(0.99), p999: at(0.999), max: s[s.length - 1] / 1000 };
}

// JIT warm-up, not measured.
coldRound();
timed(50_000, () => drawCall(pick(NAMES)));

const cold = stats(concat(Array.from({ length: ROUNDS }, coldRound)));
// The cache now holds every name (10,000 fit): each look-up below is warm.
const warm = stats(timed(WARM_CALLS, () => drawCall(pick(NAMES))));
const clock = stats(clockCost(200_000));

const fmt = (n) => n.toFixed(2).padStart(8);
console.log(`pattern grants: ${GRANTS.length} (${emptyPrefix} with an empty literal prefix), users ${USERS}, groups ${GROUPS}, names ${NAMES.length}`);
console.log(`node ${process.version}; microseconds per call, the clock's own cost included\n`);
console.log('| look-up              |   calls |   p50 µs |   p99 µs | p99.9 µs |   max µs |');
console.log('|----------------------|--------:|---------:|---------:|---------:|---------:|');
for (const [label, r] of [['cold (first of name)', cold], ['warm (cached name)', warm], ['clock alone', clock]])
  console.log(`| ${label.padEnd(20)} | ${String(r.calls).padStart(7)} | ${fmt(r.p50)} | ${fmt(r.p99)} | ${fmt(r.p999)} | ${fmt(r.max)} |`);
const verdict = cold.p99 < 20 && warm.p99 < 20 ? 'met' : 'MISSED';
console.log(`\ntarget p99 < 20 µs, cold and warm: ${verdict}  (allowed ${sink} of the measured calls)`);
