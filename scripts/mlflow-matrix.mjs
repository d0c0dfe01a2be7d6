#!/usr/bin/env node
// flowgate against every recorded MLflow release (one per 3.x minor).
//
//   node scripts/mlflow-matrix.mjs record [VERSION...]  dump the routes of these releases (default: every
//                                                        recorded one) into src/authz/catalog-versions.json
//   node scripts/mlflow-matrix.mjs run [VERSION...]     route coverage and the enforcement suite against each
//                                                        release (default: every recorded one), table in
//                                                        docs/mlflow-versions.md
//
// Both need `npm run build` first (they read the catalog from dist/). Each release gets its own venv
// (scripts/mlflow-venv.sh, outside the clone, reused). `npm run mlflow:newest` (`flowgate routes
// --check-newest`) says whether PyPI's newest release is recorded yet.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const RECORD_FILE = join(ROOT, 'src/authz/catalog-versions.json');
const DOC_FILE = join(ROOT, 'docs/mlflow-versions.md');
const E2E_FILES = ['test/e2e/route-coverage.test.ts', 'test/e2e/enforcement.test.ts'];

const { ROUTE_CATALOG } = await import(join(ROOT, 'dist/authz/catalog.js'));
const { createRouteMatcher } = await import(join(ROOT, 'dist/authz/route-matcher.js'));
const { rowsHitBy, unclassifiedRoutes } = await import(join(ROOT, 'dist/authz/mlflow-rules.js'));
const matcher = createRouteMatcher(ROUTE_CATALOG);

const log = (text) => process.stderr.write(`mlflow-matrix: ${text}\n`);

const compareVersions = (a, b) => {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  return 0;
};

function venvFor(version) {
  return execFileSync('bash', [join(ROOT, 'scripts/mlflow-venv.sh')], {
    env: { ...process.env, FLOWGATE_MLFLOW_VERSION: version },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .pop();
}

/** Every (method, rule) the release answers over HTTP, sorted. */
function dumpRoutes(version) {
  const venv = venvFor(version);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MLFLOW_') && !k.startsWith('_MLFLOW_')));
  const out = execFileSync(join(venv, 'bin/python'), [join(ROOT, 'scripts/dump-mlflow-routes.py')], {
    cwd: tmpdir(),
    env: { ...env, MLFLOW_DISABLE_TELEMETRY: 'true', PYTHONWARNINGS: 'ignore' },
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const routes = JSON.parse(out)
    .filter((r) => r.source !== 'mount' && !r.methods.includes('WEBSOCKET'))
    .flatMap((r) => r.methods.map((method) => ({ method, rule: r.rule })));
  const unique = new Map(routes.map((r) => [`${r.method} ${r.rule}`, r]));
  return [...unique.values()].sort((a, b) => (a.rule === b.rule ? a.method.localeCompare(b.method) : a.rule < b.rule ? -1 : 1));
}

const readRecord = () => JSON.parse(readFileSync(RECORD_FILE, 'utf8'));

/** [since, until) runs of `present` over the ordered releases. */
function rangesOver(releases, present) {
  const ranges = [];
  let since;
  releases.forEach((release, i) => {
    if (present(release) && since === undefined) since = release;
    if (!present(release) && since !== undefined) {
      ranges.push([since, release]);
      since = undefined;
    }
    if (i === releases.length - 1 && since !== undefined) ranges.push([since]);
  });
  return ranges;
}

const apiForm = (pattern) => pattern.replace(/^\/ajax-api\//, '/api/');

/** The shortest path prefixes (or exact rows) naming exactly the rows of each range. */
function rowSelectors(rowRanges) {
  const key = (row) => JSON.stringify(rowRanges.get(row) ?? 'all');
  const groups = new Map();
  for (const row of ROUTE_CATALOG) {
    if (!rowRanges.has(row)) continue;
    const segments = apiForm(row.pattern).split('/');
    let selector = `${row.method} ${row.pattern}`;
    // Prefixes from `/api/<version>/<family>` on, each covering its `/ajax-api/` twin.
    for (let n = 4; n <= segments.length; n++) {
      const prefix = segments.slice(0, n).join('/');
      if (prefix.includes(':') || prefix.includes('*')) break;
      const under = ROUTE_CATALOG.filter((r) => apiForm(r.pattern) === prefix || apiForm(r.pattern).startsWith(`${prefix}/`));
      if (under.every((r) => key(r) === key(row))) {
        selector = prefix;
        break;
      }
    }
    const group = groups.get(key(row)) ?? { ranges: rowRanges.get(row), rows: new Set() };
    group.rows.add(selector);
    groups.set(key(row), group);
  }
  return [...groups.values()].flatMap(({ ranges, rows }) =>
    ranges.map(([since, until]) => ({ since, ...(until ? { until } : {}), rows: [...rows].sort() })),
  );
}

function record(versions) {
  const old = readRecord();
  const releases = [...new Set([...old.releases, ...versions])].sort(compareVersions);
  const routesBy = new Map();
  for (const release of releases) {
    if (versions.includes(release)) {
      log(`dumping the routes of MLflow ${release}`);
      routesBy.set(release, dumpRoutes(release));
    } else {
      const inRange = ([, , since, until]) =>
        compareVersions(release, since) >= 0 && (until === undefined || compareVersions(release, until) < 0);
      routesBy.set(release, old.routes.filter(inRange).map(([method, rule]) => ({ method, rule })));
    }
  }
  const allRoutes = new Map();
  for (const routes of routesBy.values()) for (const r of routes) allRoutes.set(`${r.method} ${r.rule}`, r);
  const has = (release, id) => routesBy.get(release).some((r) => `${r.method} ${r.rule}` === id);
  const routeTuples = [...allRoutes.entries()]
    .sort(([a], [b]) => (a.split(' ')[1] === b.split(' ')[1] ? a.localeCompare(b) : a.split(' ')[1] < b.split(' ')[1] ? -1 : 1))
    .flatMap(([id, r]) => rangesOver(releases, (release) => has(release, id)).map((range) => [r.method, r.rule, ...range]));

  const hitBy = new Map(releases.map((release) => [release, rowsHitBy(matcher, routesBy.get(release))]));
  const rowRanges = new Map();
  for (const row of ROUTE_CATALOG) {
    const ranges = rangesOver(releases, (release) => hitBy.get(release).has(row));
    if (!(ranges.length === 1 && ranges[0][0] === releases[0] && ranges[0].length === 1)) rowRanges.set(row, ranges);
  }
  const next = {
    about: old.about,
    releases,
    rowRanges: rowSelectors(rowRanges),
    routes: routeTuples,
  };
  writeFileSync(RECORD_FILE, formatRecord(next));
  for (const release of releases) {
    const unclassified = unclassifiedRoutes(matcher, routesBy.get(release));
    log(`${release}: ${routesBy.get(release).length} routes, ${unclassified.length} unclassified${unclassified.length ? `: ${unclassified.join(', ')}` : ''}`);
  }
}

/** JSON with one route or range per line, so a new release reads as a short diff. */
function formatRecord(rec) {
  const lines = (items) => items.map((item) => `    ${JSON.stringify(item)}`).join(',\n');
  return `{
  "about": ${JSON.stringify(rec.about)},
  "releases": ${JSON.stringify(rec.releases)},
  "rowRanges": [
${lines(rec.rowRanges)}
  ],
  "routes": [
${lines(rec.routes)}
  ]
}
`;
}

/** Passed/failed test counts of one vitest run against `version`. */
function runSuites(version) {
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-matrix-'));
  const report = join(dir, 'report.json');
  const started = Date.now();
  const result = spawnSync('npx', ['vitest', 'run', ...E2E_FILES, '--reporter=default', '--reporter=json', `--outputFile.json=${report}`], {
    cwd: ROOT,
    env: { ...process.env, FLOWGATE_MLFLOW_VERSION: version },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  const byFile = new Map(E2E_FILES.map((f) => [f, { passed: 0, failed: 0, skipped: 0 }]));
  try {
    const json = JSON.parse(readFileSync(report, 'utf8'));
    for (const file of json.testResults) {
      const counts = byFile.get(E2E_FILES.find((f) => file.name.endsWith(f)));
      if (!counts) continue;
      for (const t of file.assertionResults) {
        if (t.status === 'passed') counts.passed += 1;
        else if (t.status === 'failed') counts.failed += 1;
        else counts.skipped += 1;
      }
      // A file that failed to load (a beforeAll throwing) has no passing test to show for it.
      if (file.status === 'failed' && counts.failed === 0) counts.failed = 1;
    }
  } catch {
    for (const counts of byFile.values()) counts.failed ||= 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return { code: result.status, seconds, coverage: byFile.get(E2E_FILES[0]), enforcement: byFile.get(E2E_FILES[1]) };
}

const verdict = (c) => `${c.failed === 0 && c.passed > 0 ? 'pass' : 'FAIL'} (${c.passed} passed, ${c.failed} failed${c.skipped ? `, ${c.skipped} skipped` : ''})`;

function run(versions) {
  const rows = [];
  for (const version of versions) {
    log(`MLflow ${version}: installing or reusing its venv, dumping its routes`);
    const routes = dumpRoutes(version);
    const unclassified = unclassifiedRoutes(matcher, routes);
    log(`MLflow ${version}: ${routes.length} routes, ${unclassified.length} unclassified; running ${E2E_FILES.join(' and ')}`);
    const suites = runSuites(version);
    rows.push({ version, routes: routes.length, unclassified: unclassified.length, ...suites });
  }
  writeDoc(rows);
  const green = rows.every((r) => r.unclassified === 0 && r.code === 0);
  log(green ? 'every release green' : 'some release is not green: see docs/mlflow-versions.md');
  return green ? 0 : 1;
}

/** Rewrites the table for the releases run now, keeping the rows of releases not run. */
function writeDoc(rows) {
  const HEADER = '| MLflow | routes | unclassified | route coverage | enforcement suite | time |';
  let kept = [];
  try {
    kept = readFileSync(DOC_FILE, 'utf8').split('\n').filter((line) => /^\| \d+\.\d+\.\d+ \|/.test(line));
  } catch {
    // First run.
  }
  const lines = new Map(kept.map((line) => [line.split('|')[1].trim(), line]));
  for (const r of rows) {
    lines.set(r.version, `| ${r.version} | ${r.routes} | ${r.unclassified} | ${verdict(r.coverage)} | ${verdict(r.enforcement)} | ${r.seconds} s |`);
  }
  const table = [...lines.keys()].sort(compareVersions).map((v) => lines.get(v));
  writeFileSync(
    DOC_FILE,
    `# MLflow releases flowgate was run against

Written by \`npm run test:mlflow-matrix\` (scripts/mlflow-matrix.mjs); a row is replaced each time its
release is run. For each release (one per 3.x minor, the newest patch of each): the (method, route)
pairs its server answers, how many of them flowgate's route catalog does not classify (such a route
is denied to everyone), and the results of \`test/e2e/route-coverage.test.ts\` (the catalog against
that release's own route table, both ways, and the look-ups flowgate makes against it) and
\`test/e2e/enforcement.test.ts\` (personas with READ, EDIT, MANAGE and no grant driving the real
MLflow client through flowgate). A skipped case is one whose routes that release does not have
(issues before 3.11, label schemas and review queues before 3.14, evaluation datasets before 3.4).

${HEADER}
|---|---|---|---|---|---|
${table.join('\n')}

Last run: ${new Date().toISOString().slice(0, 10)}. Install quirks per release are in
\`scripts/mlflow-venv.sh\`; each release's routes and the catalog rows it has are recorded in
\`src/authz/catalog-versions.json\` (\`node scripts/mlflow-matrix.mjs record <version>\` adds a release).
\`npm run mlflow:newest\` (\`flowgate routes --check-newest\`) asks PyPI for its newest MLflow release and
exits 1, naming the release and the command that records it, when it is not recorded yet.
`,
  );
}

const [command, ...args] = process.argv.slice(2);
const recorded = readRecord().releases;
if (command === 'record') {
  record(args.length ? args : recorded);
} else if (command === 'run') {
  process.exitCode = run(args.length ? args : recorded);
} else {
  process.stderr.write('usage: node scripts/mlflow-matrix.mjs record|run [VERSION...]\n');
  process.exitCode = 2;
}
