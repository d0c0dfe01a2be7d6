import Database from 'better-sqlite3';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImport } from '../../src/commands/import.js';
import { loadConfig } from '../../src/config.js';
import { planOidcAuth } from '../../src/import/oidc-auth-plan.js';
import { readOidcAuth } from '../../src/import/oidc-auth-read.js';
import { openSourceDatabase } from '../../src/import/source-database.js';
import { openStore } from '../../src/store/store.js';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { mlflowVenv, runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps, type Op, type Outcome } from '../helpers/python-ops.js';
import { storeSettings } from '../helpers/test-store.js';

/**
 * Issue 37: a real mlflow-oidc-auth 11 database, made by the plugin's own alembic migrations and
 * filled through its own store (`mlflow_oidc_auth.store`): groups with members, user and group grants,
 * a NO_PERMISSIONS, a regex rule with an exact glob and one without. Imported into flowgate in front
 * of a plain MLflow 3.17.2, the real Python client gets for each persona what the plugin's OWN
 * resolver (`utils.grant_context.resolve`, the one its request hooks call, run in Python against the
 * same database with its default PERMISSION_SOURCE_ORDER and DEFAULT_MLFLOW_PERMISSION) answers,
 * except where a rule was left out: there flowgate refuses what the plugin allowed, never the reverse.
 * The plugin is not run as a server: its OIDC login is not what is compared, its decisions are.
 */
const REPO = fileURLToPath(new URL('../..', import.meta.url));
const DB_SCRIPT = join(REPO, 'test/e2e/py/oidc_auth_db.py');
const PERSONAS = ['root', 'alice', 'bob', 'carol', 'dave', 'erin'];

const oidcVenv = () => execFileSync('bash', [join(REPO, 'scripts/mlflow-oidc-auth-venv.sh')], { encoding: 'utf8', timeout: 900_000 }).trim().split('\n').pop()!;

/** Runs test/e2e/py/oidc_auth_db.py (the plugin's own code) with `request` on stdin. */
function pluginDb(venv: string, request: Record<string, unknown>): string[] {
  const r = spawnSync(join(venv, 'bin/python'), [DB_SCRIPT], { input: JSON.stringify(request), encoding: 'utf8', timeout: 300_000, env: { ...process.env, PYTHONWARNINGS: 'ignore' } });
  const line = r.stdout.split('\n').find((l) => l.startsWith('@@RESULT@@'));
  if (line === undefined) throw new Error(`oidc_auth_db.py failed (${r.status}):\n${r.stderr.slice(-4000)}`);
  return JSON.parse(line.slice('@@RESULT@@'.length)) as string[];
}

const MAKE_RESOURCES = `
import json, mlflow
from mlflow import MlflowClient
c = MlflowClient()
exps = {n: c.create_experiment(n) for n in ["exp-shared", "team-a-x", "team-b-y", "team-d-z"]}
for m in ["model-m", "other-m"]:
    c.create_registered_model(m)
mlflow.genai.register_prompt(name="prompt-p", template="Hello {{name}}")
print("@@" + json.dumps(exps))
`;

type Kind = 'experiment' | 'registered_model' | 'prompt';
/** Each op, the resource it touches and the level it needs. */
const probes = (exps: Record<string, string>): Array<{ op: Op; kind: Kind; id: string; name: string | null; needs: 'read' | 'edit' }> => [
  ...Object.entries(exps).map(([name, id]) => ({ op: [`get ${name}`, 'get_experiment', id] as Op, kind: 'experiment' as const, id, name, needs: 'read' as const })),
  { op: ['run in exp-shared', 'create_run', exps['exp-shared']], kind: 'experiment', id: exps['exp-shared']!, name: 'exp-shared', needs: 'edit' },
  { op: ['run in team-a-x', 'create_run', exps['team-a-x']], kind: 'experiment', id: exps['team-a-x']!, name: 'team-a-x', needs: 'edit' },
  { op: ['get model-m', 'get_registered_model', 'model-m'], kind: 'registered_model', id: 'model-m', name: null, needs: 'read' },
  { op: ['get other-m', 'get_registered_model', 'other-m'], kind: 'registered_model', id: 'other-m', name: null, needs: 'read' },
  { op: ['load prompt-p', 'load_prompt', 'prompt-p', 1], kind: 'prompt', id: 'prompt-p', name: null, needs: 'read' },
];

const allows = (permission: string, needs: 'read' | 'edit') =>
  permission === 'ADMIN' || (needs === 'read' ? ['READ', 'USE', 'EDIT', 'MANAGE'] : ['EDIT', 'MANAGE']).includes(permission);
const answer = (o: Outcome) => (o.ok ? 'allow' : o.error === 'PERMISSION_DENIED' ? 'deny' : `error: ${o.error}`);

describe('flowgate import mlflow-oidc-auth (mlflow-oidc-auth 11.0.2, real database)', () => {
  const work = mkdtempSync(join(tmpdir(), 'flowgate-import-oidc-'));
  const authDb = join(work, 'auth.db');
  const storeDir = mkdtempSync(join(tmpdir(), 'flowgate-import-oidc-store-'));
  let venv: string;
  let pluginVenv: string;
  let plain: MlflowServer | undefined;
  let fg: TestFlowgate | undefined;
  let exps: Record<string, string>;
  /** persona → op label → the plugin's answer. */
  const plugin: Record<string, Record<string, string>> = {};

  const importConfig = async () => loadConfig({ ...(await storeSettings(storeDir)), FLOWGATE_ADMIN_USERNAME: ADMIN.username, FLOWGATE_ADMIN_TOKEN: ADMIN.token });
  const runCli = async (args: string[]) => {
    let out = '';
    let err = '';
    const code = await runImport(args, await importConfig(), { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };

  beforeAll(async () => {
    [venv, pluginVenv] = await Promise.all([mlflowVenv(), Promise.resolve().then(oidcVenv)]);
    plain = await startMlflowServer();
    const made = await runPython(venv, MAKE_RESOURCES, { MLFLOW_TRACKING_URI: plain.url });
    expect(made.code, made.stderr.slice(-3000)).toBe(0);
    exps = JSON.parse(made.stdout.split('@@')[1]!) as Record<string, string>;
    const seed: unknown[][] = [
      ['create_user', 'root', 'Root', true],
      ['create_user', 'alice', 'Alice'],
      ['create_user', 'bob', 'Bob'],
      ['create_user', 'carol', 'Carol'],
      ['create_user', 'dave', 'Dave'],
      ['create_user', 'erin', 'Erin'],
      ['create_user', 'ci-bot', 'CI', false, true],
      ['populate_groups', ['team-a', 'readers']],
      ['add_user_to_group', 'alice', 'team-a'],
      ['add_user_to_group', 'bob', 'team-a'],
      ['add_user_to_group', 'carol', 'team-a'],
      ['add_user_to_group', 'bob', 'readers'],
      ['add_user_to_group', 'erin', 'readers'],
      ['create_group_experiment_permission', 'team-a', exps['exp-shared'], 'EDIT'],
      // carol is shut out of what her group may edit.
      ['create_experiment_permission', exps['exp-shared'], 'carol', 'NO_PERMISSIONS'],
      // An exact regex (→ `team-a-*`) and one with a character class (left out, its names denied to readers).
      ['create_experiment_regex_permission', '^team-a-.*$', 1, 'EDIT', 'alice'],
      ['create_group_experiment_regex_permission', 'readers', '^team-[bd]-.*', 5, 'READ'],
      ['create_group_registered_model_regex_permission', 'readers', '^model-.*$', 1, 'READ'],
      ['create_group_prompt_permission', 'readers', 'prompt-p', 'READ'],
      ['create_registered_model_permission', 'other-m', 'erin', 'NO_PERMISSIONS'],
    ];
    const list = probes(exps);
    const ask = PERSONAS.flatMap((p) => list.map((x) => [p, x.kind, x.id, x.name]));
    const answers = pluginDb(pluginVenv, { db: authDb, seed, ask });
    PERSONAS.forEach((p, i) => {
      plugin[p] = Object.fromEntries(list.map((x, j) => [x.op[0], allows(answers[i * list.length + j]!, x.needs) ? 'allow' : 'deny']));
    });
  }, 1_200_000);

  afterAll(async () => {
    await fg?.close();
    await plain?.stop();
    rmSync(work, { recursive: true, force: true });
    removeDir(storeDir);
  });

  it("the plugin's own resolver answers the personas as seeded (the reference)", () => {
    expect(plugin.root!['run in exp-shared']).toBe('allow');
    expect(plugin.alice).toMatchObject({ 'run in team-a-x': 'allow', 'run in exp-shared': 'allow', 'get team-b-y': 'deny' });
    expect(plugin.carol).toMatchObject({ 'get exp-shared': 'deny', 'get team-a-x': 'deny' });
    expect(plugin.bob).toMatchObject({ 'get team-b-y': 'allow', 'get team-a-x': 'deny', 'get model-m': 'allow', 'load prompt-p': 'allow' });
    expect(plugin.erin).toMatchObject({ 'get model-m': 'allow', 'get other-m': 'deny', 'get team-d-z': 'allow' });
    expect(Object.values(plugin.dave!).every((a) => a === 'deny')).toBe(true);
  });

  it('a dry run prints the plan: the exact regex as a pattern grant, the other listed as not imported; nothing written', async () => {
    const r = await runCli(['mlflow-oidc-auth', '--from', `sqlite:///${authDb}`, '--dry-run']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^# mlflow-oidc-auth \(revision e1f2a3b4c5d6: /m);
    expect(r.out).toContain('+ user root (administrator)');
    expect(r.out).toContain('+ user ci-bot (service account)');
    expect(r.out).toContain('+ member bob of group readers');
    expect(r.out).toContain(`+ grant user carol: NO_PERMISSIONS on experiment ${exps['exp-shared']}`);
    expect(r.out).toContain(`+ grant group team-a: EDIT on experiment ${exps['exp-shared']}`);
    expect(r.out).toContain('+ pattern user alice: EDIT on every experiment matching team-a-*');
    expect(r.out).toContain('+ pattern group readers: READ on every registered_model matching model-*');
    expect(r.out).toContain("not imported: group readers: experiment regex '^team-[bd]-.*' (priority 5, READ): no exact glob: a character class");
    expect(r.out).toContain('+ pattern group readers: NO_PERMISSIONS on every experiment matching team-*');
    expect(r.err).toContain('dry run: none applied');
    process.stdout.write(`--- the plan, as printed ---\n${r.out}`);
    const store = await openStore({ ...(await importConfig()), watchMs: 0 });
    try {
      expect(await store.sql.get('SELECT 1 AS one FROM users WHERE username = ?', ['alice'])).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('imports in one go, audited; a second import changes nothing and audits nothing', async () => {
    const first = await runCli(['mlflow-oidc-auth', '--from', `sqlite:///${authDb}`]);
    expect(first.code, first.err).toBe(0);
    expect(first.err).toContain('changes applied in one transaction');
    const store = await openStore({ ...(await importConfig()), watchMs: 0 });
    try {
      const audited = async () => (await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM audit_log'))!.n;
      const before = await audited();
      expect(await store.sql.get("SELECT 1 AS one FROM audit_log WHERE action = 'import.apply' AND actor = 'flowgate import mlflow-oidc-auth'")).toBeDefined();
      const again = await runCli(['mlflow-oidc-auth', '--from', `sqlite:///${authDb}`]);
      expect(again.code, again.err).toBe(0);
      expect(again.err).toContain('no changes');
      expect(await audited()).toBe(before);
    } finally {
      await store.close();
    }
  });

  it("through flowgate the real client gets the plugin's answers; where a rule was left out, only refusals the plugin did not make", async () => {
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: plain!.url }, storeDir);
    const api = jsonCaller(() => fg!.url);
    const list = probes(exps);
    const seen: Record<string, Record<string, string>> = {};
    for (const p of PERSONAS) {
      const token = (await api.call('PATCH', '/api/2.0/mlflow/permissions/users/access-token', { username: p })).token as string;
      const outcomes = await runOps(venv, fg.url, p, token, list.map((x) => x.op));
      seen[p] = Object.fromEntries(Object.entries(outcomes).map(([op, o]) => [op, answer(o)]));
    }
    const differences: string[] = [];
    for (const p of PERSONAS) for (const x of list) if (seen[p]![x.op[0]] !== plugin[p]![x.op[0]]) differences.push(`${p} ${x.op[0]}: plugin ${plugin[p]![x.op[0]]}, flowgate ${seen[p]![x.op[0]]}`);
    process.stdout.write(`--- persona matrix through flowgate ---\n${JSON.stringify(seen, null, 1)}\n--- differences ---\n${differences.join('\n')}\n`);
    // The one intended difference: readers' `^team-[bd]-.*` was left out and its names (team-*) denied
    // to the group, so bob and erin lose the READ it gave them on team-b-y and team-d-z.
    expect(differences.sort()).toEqual(
      ['bob get team-b-y', 'bob get team-d-z', 'erin get team-b-y', 'erin get team-d-z'].map((d) => `${d}: plugin allow, flowgate deny`).sort(),
    );
  }, 600_000);
});

/**
 * The schema generations in use: databases the plugin's own migrations leave at earlier revisions
 * (regex rules, then scorers, the AI gateway, workspaces), filled with the columns each has, read as
 * the same grants and patterns.
 */
describe('mlflow-oidc-auth schema generations', () => {
  const work = mkdtempSync(join(tmpdir(), 'flowgate-import-oidc-gen-'));
  let pluginVenv: string;
  beforeAll(() => {
    pluginVenv = oidcVenv();
  }, 900_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it.each([
    ['1ddf23934b63', 'regex rules'],
    ['3c3272527ade', 'scorers'],
    ['6a7b8c9def01', 'AI gateway'],
    ['7b8c9d0ef123', 'workspaces'],
    ['head', 'MCP servers'],
  ])('revision %s (%s)', async (revision, feature) => {
    const path = join(work, `${revision}.db`);
    pluginDb(pluginVenv, { db: path, revision });
    const db = new Database(path);
    const columns = (t: string) => new Set((db.prepare(`SELECT name FROM pragma_table_info('${t}')`).all() as Array<{ name: string }>).map((c) => c.name));
    const insert = (table: string, row: Record<string, unknown>) => {
      const have = columns(table);
      const keys = Object.keys(row).filter((k) => have.has(k));
      db.prepare(`INSERT INTO ${table} (${keys.join(', ')}) VALUES (${keys.map(() => '?').join(', ')})`).run(...keys.map((k) => row[k]));
    };
    const now = new Date().toISOString();
    insert('users', { id: 1, username: 'ann', display_name: 'Ann', password_hash: 'x', password_expiration: null, is_admin: 0, is_service_account: 0, active: 1, managed_by: 'manual', created_at: now, updated_at: now });
    insert('groups', { id: 1, group_name: 'team', managed_by: 'manual', created_at: now, updated_at: now });
    insert('user_groups', { user_id: 1, group_id: 1, managed_by: 'manual' });
    insert('experiment_permissions', { experiment_id: '5', user_id: 1, permission: 'EDIT' });
    insert('registered_model_group_permissions', { name: 'm', group_id: 1, permission: 'READ', prompt: 0, workspace: 'default' });
    insert('experiment_regex_permissions', { regex: '^team-.*$', priority: 1, user_id: 1, permission: 'READ', workspace: '*' });
    db.close();
    const source = await openSourceDatabase(`sqlite:///${path}`);
    try {
      const p = planOidcAuth(await readOidcAuth(source), { mlflowDefault: 'NO_PERMISSIONS', flowgateDefault: 'NO_PERMISSIONS' });
      expect(p.source).toContain(feature);
      expect(p.groups).toEqual([{ name: 'team', members: ['ann'] }]);
      expect(p.grants).toEqual(
        expect.arrayContaining([
          { grantee: { type: 'user', name: 'ann' }, kind: 'experiment', id: '5', permission: 'EDIT' },
          { grantee: { type: 'group', name: 'team' }, kind: 'registered_model', id: 'm', permission: 'READ' },
          { grantee: { type: 'group', name: 'team' }, kind: 'prompt', id: 'm', permission: 'READ' },
        ]),
      );
      expect(p.patterns).toContainEqual({ grantee: { type: 'user', name: 'ann' }, kind: 'experiment', pattern: 'team-*', permission: 'READ' });
    } finally {
      await source.close();
    }
  }, 300_000);
});
