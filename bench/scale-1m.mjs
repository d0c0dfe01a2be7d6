// The scale row of issue 39: 1M grants, 100k users and 1k MLflow workspaces in one SQLite store; how
// long flowgate takes to start on it (spawn to /healthz), its memory after start, and the decision's
// p50/p99 over that index (decide() + the policy look-up, in the caller's workspace), cold and warm.
// Usage: npm run build && node bench/scale-1m.mjs   (about a minute; prints one JSON object)
import { fork } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decide } from '../dist/authz/decide.js';
import { createGrantsRepo } from '../dist/authz/grants-repo.js';
import { createPolicyReader } from '../dist/authz/policy.js';
import { openDatabase, openSqliteStore } from '../dist/store/database.js';
import { inWorkspace } from '../dist/workspaces/request-workspace.js';
import { groupsByUser, timeEach } from './large-store.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const NODE_FLAGS = JSON.parse(readFileSync(join(HERE, '../package.json'), 'utf8')).flowgate.nodeFlags;
const USERS = 100_000;
const GROUPS = 10_000;
const WORKSPACES = 1_000;
const USER_GRANTS = 900_000;
const GROUP_GRANTS = 100_000;
const MODELS_PER_WORKSPACE = 300;
const SEP = '\u001f';

const counter = (rows) => `WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows - 1})`;
/** The stored id of model `m` of workspace `w` (workspace 0 is `default`: its ids are stored as they are). */
const modelId = (w, m) => (w === 0 ? `model-${m}` : `ws-${w}${SEP}model-${m}`);
const modelIdSql = (w, m) => `CASE WHEN ${w} = 0 THEN 'model-' || (${m}) ELSE 'ws-' || (${w}) || char(31) || 'model-' || (${m}) END`;

function seed(dbPath) {
  const started = Date.now();
  const db = openDatabase(dbPath);
  const t = Date.now();
  db.transaction(() => {
    db.exec(`INSERT INTO users (id, username, display_name, is_admin, is_service_account, created_at)
      ${counter(USERS)} SELECT i + 1, 'user-' || i, 'User ' || i, 0, 0, ${t} FROM n`);
    db.exec(`INSERT INTO groups (id, name, created_at) ${counter(GROUPS)} SELECT i + 1, 'group-' || i, ${t} FROM n`);
    db.exec(`INSERT INTO group_members (group_id, user_id) ${counter(USERS)} SELECT (i % ${GROUPS}) + 1, i + 1 FROM n`);
    db.exec(`INSERT INTO group_members (group_id, user_id) ${counter(USERS)} SELECT ((i * 7 + 3) % ${GROUPS}) + 1, i + 1 FROM n`);
    // Each group a member of one workspace: 10 groups per workspace.
    db.exec(`INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at)
      ${counter(GROUPS)} SELECT 'workspace', 'ws-' || (i % ${WORKSPACES}), i + 1, 'USE', ${t}, ${t} FROM n`);
    db.exec(`INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at)
      ${counter(USER_GRANTS)} SELECT 'registered_model', ${modelIdSql(`(i / 9) % ${WORKSPACES}`, `((i / 9 / ${WORKSPACES}) * 9 + i % 9) % ${MODELS_PER_WORKSPACE}`)}, (i / 9) + 1,
        CASE i % 4 WHEN 0 THEN 'READ' WHEN 1 THEN 'EDIT' WHEN 2 THEN 'MANAGE' ELSE 'NO_PERMISSIONS' END, ${t}, ${t} FROM n`);
    db.exec(`INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at)
      ${counter(GROUP_GRANTS)} SELECT 'registered_model', ${modelIdSql(`i % ${WORKSPACES}`, `i / ${GROUPS}`)}, (i % ${GROUPS}) + 1, 'EDIT', ${t}, ${t} FROM n`);
  })();
  const grants = db.prepare('SELECT count(*) AS n FROM grants').get().n;
  db.close();
  return { grants, seedMs: Date.now() - started };
}

/** flowgate in its own process as shipped: spawn to its first `/healthz` answer, then its memory. */
async function start(dbPath, dir) {
  const spawned = process.hrtime.bigint();
  const child = fork(join(HERE, 'flowgate.mjs'), [], {
    execArgv: NODE_FLAGS,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: {
      ...process.env,
      FLOWGATE_HOST: '127.0.0.1',
      FLOWGATE_PORT: '0',
      FLOWGATE_METRICS_PORT: '0',
      FLOWGATE_DB_PATH: dbPath,
      // Nothing listens there: flowgate starts anyway (MLflow is not needed to load the policy).
      FLOWGATE_UPSTREAM_URL: 'http://127.0.0.1:9',
      FLOWGATE_LOG_LEVEL: 'warn',
      FLOWGATE_ADMIN_USERNAME: 'admin',
      FLOWGATE_ADMIN_TOKEN: 'scale-bench-admin-token-0123456789abcdef',
      HOME: dir,
    },
  });
  const { url } = await new Promise((resolve, reject) => {
    child.once('message', resolve);
    child.once('exit', (code) => reject(new Error(`flowgate exited (${code})`)));
  });
  for (;;) {
    const r = await fetch(`${url}/healthz`).catch(() => undefined);
    if (r?.ok) break;
    await new Promise((r2) => setTimeout(r2, 20));
  }
  const startMs = Number(process.hrtime.bigint() - spawned) / 1e6;
  await new Promise((r) => setTimeout(r, 2000));
  const stats = await new Promise((resolve) => {
    child.once('message', resolve);
    child.send('stats');
  });
  child.disconnect();
  await new Promise((r) => child.once('exit', r));
  return { startMs, rssMb: stats.rss / 1e6, maxRssMb: stats.maxRss / 1e6 };
}

async function decisions(dbPath) {
  const sql = openSqliteStore(dbPath);
  const loadStarted = process.hrtime.bigint();
  const policy = createPolicyReader(createGrantsRepo(sql));
  await policy.reloadAll();
  const indexLoadMs = Number(process.hrtime.bigint() - loadStarted) / 1e6;
  const groupsOf = await groupsByUser(sql);
  await sql.close();
  const pairs = Array.from({ length: 20_000 }, (_, i) => {
    const userId = ((i * 7919) % USERS) + 1;
    // Half in the caller's own workspace, on a model they hold a grant on; half anywhere.
    const own = i % 2 === 0;
    const u = userId - 1;
    const w = own ? u % WORKSPACES : (i * 104_729) % WORKSPACES;
    const model = own ? (Math.floor(u / WORKSPACES) * 9 + (i % 9)) % MODELS_PER_WORKSPACE : (i * 31) % MODELS_PER_WORKSPACE;
    return { who: { userId, groupIds: groupsOf.get(userId) ?? [] }, workspace: w === 0 ? 'default' : `ws-${w}`, ref: { kind: 'registered_model', id: `model-${model}` } };
  });
  const one = (p) =>
    inWorkspace(p.workspace, () => {
      const member = policy.factsFor(p.who, { kind: 'workspace', id: p.workspace });
      const isMember = member.direct !== undefined || member.groups.length > 0 || p.workspace === 'default';
      return decide({ isAdmin: false, need: 'read', facts: [policy.factsFor(p.who, p.ref)], defaultPermission: 'READ', createRequiresAdmin: false, workspace: { member: isMember, manage: false } });
    });
  for (let i = 0; i < 5000; i++) one(pairs[i % 100]);
  const cold = timeEach(pairs, one);
  const warm = timeEach(pairs, one);
  return { indexLoadMs, cold, warm, rssMbInProcess: process.memoryUsage().rss / 1e6, keys: policy.resources };
}

const dir = mkdtempSync(join(tmpdir(), 'flowgate-scale-'));
try {
  const dbPath = join(dir, 'flowgate.db');
  const seeded = seed(dbPath);
  const process_ = await start(dbPath, dir);
  const decision = await decisions(dbPath);
  console.log(JSON.stringify({ users: USERS, groups: GROUPS, workspaces: WORKSPACES, ...seeded, flowgate: process_, decision }, null, 2));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
