import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImport } from '../../src/commands/import.js';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/store/store.js';
import { ADMIN, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { mlflowAuthExtras, mlflowVenv, runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps, type Op, type Outcome } from '../helpers/python-ops.js';
import { storeSettings } from '../helpers/test-store.js';

/**
 * Issue 37: a real MLflow 3.17.2 basic-auth database (made by `mlflow server --app-name basic-auth`
 * through its own AuthServiceClient: users with passwords, roles with grants and members, a DENY,
 * a `*` grant), imported into flowgate. The real Python client, with each user's OLD password, gets
 * through flowgate (in front of a plain MLflow holding the same experiments) exactly the allow/deny
 * answers the basic-auth app gave it.
 */
const PASSWORDS: Record<string, string> = {
  alice: 'alice-password-0001',
  bob: 'bob-password-000002',
  carol: 'carol-password-0003',
  dave: 'dave-password-00004',
  erin: 'erin-password-00005',
};
const ADMIN_PASSWORD = 'admin-password-for-basic-auth-1';
const PERSONAS = Object.keys(PASSWORDS);

/** The same resources, in the same order, so a fresh MLflow gives them the same ids. */
const MAKE_RESOURCES = `
import json
from mlflow import MlflowClient
c = MlflowClient()
exps = {n: c.create_experiment(n) for n in ["exp-a", "exp-b", "exp-c"]}
runs = {n: c.create_run(exps[n]).info.run_id for n in exps}
c.create_registered_model("model-m")
`;

const SEED_GRANTS = `
from mlflow.server.auth.client import AuthServiceClient
import os
auth = AuthServiceClient(os.environ["MLFLOW_TRACKING_URI"])
passwords = json.loads(os.environ["PASSWORDS"])
for u, p in passwords.items():
    auth.create_user(u, p)
# A user's own grant, a role's '*' grant, roles' exact grants, DENYs both own and through a role.
auth.grant_user_permission("alice", "experiment", exps["exp-a"], "EDIT")
readers = auth.create_role("default", "readers")
auth.add_role_permission(readers.id, "experiment", "*", "READ")
team = auth.create_role("default", "team")
auth.add_role_permission(team.id, "experiment", exps["exp-a"], "EDIT")
auth.add_role_permission(team.id, "registered_model", "model-m", "MANAGE")
blocked = auth.create_role("default", "blocked")
auth.add_role_permission(blocked.id, "experiment", exps["exp-c"], "DENY")
auth.add_role_permission(blocked.id, "registered_model", "model-m", "DENY")
for user, role in [("bob", readers), ("carol", readers), ("carol", team), ("erin", readers), ("erin", blocked)]:
    auth.assign_role(user, role.id)
auth.grant_user_permission("bob", "experiment", exps["exp-b"], "DENY")
# Weaker than her role's EDIT: basic-auth gives her the stronger of the two.
auth.grant_user_permission("carol", "experiment", exps["exp-a"], "READ")
`;

const opsFor = (r: { exps: Record<string, string>; runs: Record<string, string> }): Op[] => [
  ['get A', 'get_experiment', r.exps['exp-a']],
  ['get B', 'get_experiment', r.exps['exp-b']],
  ['get C', 'get_experiment', r.exps['exp-c']],
  ['log on A', 'log_metric', r.runs['exp-a']],
  ['log on C', 'log_metric', r.runs['exp-c']],
  ['run in A', 'create_run', r.exps['exp-a']],
  ['get model', 'get_registered_model', 'model-m'],
];

const answer = (o: Outcome) => (o.ok ? 'allow' : o.error === 'PERMISSION_DENIED' ? 'deny' : `error: ${o.error}`);
const matrix = (results: Record<string, Record<string, Outcome>>) =>
  Object.fromEntries(Object.entries(results).map(([user, outcomes]) => [user, Object.fromEntries(Object.entries(outcomes).map(([op, o]) => [op, answer(o)]))]));

describe('flowgate import mlflow-basic-auth (MLflow 3.17.2, real database)', () => {
  const work = mkdtempSync(join(tmpdir(), 'flowgate-import-'));
  const authDb = join(work, 'basic_auth.db');
  const storeDir = mkdtempSync(join(tmpdir(), 'flowgate-import-store-'));
  let venv: string;
  let original: Record<string, Record<string, string>>;
  let plain: MlflowServer | undefined;
  let fg: TestFlowgate | undefined;
  let resources: { exps: Record<string, string>; runs: Record<string, string> };

  const importConfig = async () => loadConfig({ ...(await storeSettings(storeDir)), FLOWGATE_ADMIN_USERNAME: ADMIN.username, FLOWGATE_ADMIN_TOKEN: ADMIN.token, FLOWGATE_DEFAULT_PERMISSION: 'READ' });
  const runCli = async (args: string[]) => {
    let out = '';
    let err = '';
    const code = await runImport(args, await importConfig(), { out: (t) => void (out += t), err: (t) => void (err += t) });
    return { code, out, err };
  };

  beforeAll(async () => {
    venv = await mlflowVenv();
    // basic-auth needs Flask-WTF, which the pinned venv does not carry: beside it, as the bench keeps it.
    const extras = await mlflowAuthExtras(venv);
    writeFileSync(
      join(work, 'basic_auth.ini'),
      `[mlflow]\ndefault_permission = READ\ndatabase_uri = sqlite:///${authDb}\nadmin_username = admin\nauthorization_function = mlflow.server.auth:authenticate_request_basic_auth\n`,
    );
    const basicAuth = await startMlflowServer({
      args: ['--app-name', 'basic-auth'],
      env: {
        PYTHONPATH: extras,
        MLFLOW_AUTH_CONFIG_PATH: join(work, 'basic_auth.ini'),
        MLFLOW_AUTH_ADMIN_PASSWORD: ADMIN_PASSWORD,
        MLFLOW_FLASK_SERVER_SECRET_KEY: 'import-test-secret-key',
      },
    });
    try {
      const seeded = await runPython(venv, `${MAKE_RESOURCES}${SEED_GRANTS}\nprint("@@" + json.dumps({"exps": exps, "runs": runs}))`, {
        MLFLOW_TRACKING_URI: basicAuth.url,
        MLFLOW_TRACKING_USERNAME: 'admin',
        MLFLOW_TRACKING_PASSWORD: ADMIN_PASSWORD,
        PASSWORDS: JSON.stringify(PASSWORDS),
        PYTHONPATH: extras,
      });
      expect(seeded.code, seeded.stderr.slice(-3000)).toBe(0);
      const ids = JSON.parse(seeded.stdout.split('@@')[1]!) as typeof resources;
      const results: Record<string, Record<string, Outcome>> = {};
      for (const user of PERSONAS) results[user] = await runOps(venv, basicAuth.url, user, PASSWORDS[user]!, opsFor(ids));
      original = matrix(results);
    } finally {
      await basicAuth.stop();
    }
    plain = await startMlflowServer();
    const made = await runPython(venv, `${MAKE_RESOURCES}\nprint("@@" + json.dumps({"exps": exps, "runs": runs}))`, { MLFLOW_TRACKING_URI: plain.url });
    expect(made.code, made.stderr.slice(-3000)).toBe(0);
    resources = JSON.parse(made.stdout.split('@@')[1]!) as typeof resources;
  }, 1_200_000);

  afterAll(async () => {
    await fg?.close();
    await plain?.stop();
    rmSync(work, { recursive: true, force: true });
    removeDir(storeDir);
  });

  it('the basic-auth app answered the personas as seeded (the reference the import must match)', () => {
    expect(original.alice).toMatchObject({ 'log on A': 'allow', 'log on C': 'deny', 'get C': 'allow' });
    expect(original.bob).toMatchObject({ 'get A': 'allow', 'get B': 'deny', 'log on A': 'deny' });
    expect(original.carol).toMatchObject({ 'log on A': 'allow', 'get model': 'allow' });
    expect(original.erin).toMatchObject({ 'get A': 'allow', 'get C': 'deny', 'get model': 'deny' });
  });

  it('a dry run prints the plan, lists what it leaves out, and writes nothing', async () => {
    const r = await runCli(['mlflow-basic-auth', '--from', `sqlite:///${authDb}`, '--dry-run']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('+ user carol');
    expect(r.out).toContain('+ group readers');
    expect(r.out).toContain('+ member erin of group blocked');
    expect(r.out).toContain(`+ grant user bob: NO_PERMISSIONS on experiment ${resources.exps['exp-b']}`);
    expect(r.out).toContain('+ pattern group readers: READ on every experiment matching *');
    // carol's own READ would outrank her role's EDIT in flowgate: her answer is pinned to basic-auth's.
    expect(r.out).toContain(`user carol: experiment ${resources.exps['exp-a']} EDIT of their own`);
    expect(r.out).toMatch(/\+ password of alice \(scrypt\)/);
    expect(r.out).not.toMatch(/scrypt:\d+:\d+:\d+\$/);
    expect(r.err).toContain('dry run: none applied');
    process.stdout.write(`--- the plan, as printed ---\n${r.out}`);
    const store = await openStore({ ...(await importConfig()), watchMs: 0 });
    try {
      expect(await store.sql.get('SELECT 1 AS one FROM users WHERE username = ?', ['carol'])).toBeUndefined();
    } finally {
      await store.close();
    }
  });

  it('imports in one go, audited; a second import changes nothing and audits nothing', async () => {
    const first = await runCli(['mlflow-basic-auth', '--from', `sqlite:///${authDb}`]);
    expect(first.code, first.err).toBe(0);
    expect(first.err).toContain('changes applied in one transaction');
    const store = await openStore({ ...(await importConfig()), watchMs: 0 });
    try {
      const audited = async () => (await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM audit_log'))!.n;
      const before = await audited();
      expect(await store.sql.get("SELECT 1 AS one FROM audit_log WHERE action = 'import.apply'")).toBeDefined();
      const logged = await store.sql.all<{ new_value: string | null }>("SELECT new_value FROM audit_log WHERE action = 'user.legacy-password'");
      // The personas and basic-auth's own admin (no flowgate has run on this store yet, so no token retires it).
      expect(logged.length).toBe(PERSONAS.length + 1);
      for (const l of logged) expect(l.new_value ?? '').not.toMatch(/scrypt|pbkdf2|\$/);
      const again = await runCli(['mlflow-basic-auth', '--from', `sqlite:///${authDb}`]);
      expect(again.code, again.err).toBe(0);
      expect(again.err).toContain('no changes');
      expect(await audited()).toBe(before);
    } finally {
      await store.close();
    }
  });

  it('through flowgate, each persona with the old password gets the answers basic-auth gave', async () => {
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: plain!.url, FLOWGATE_DEFAULT_PERMISSION: 'READ' }, storeDir);
    const results: Record<string, Record<string, Outcome>> = {};
    for (const user of PERSONAS) results[user] = await runOps(venv, fg.url, user, PASSWORDS[user]!, opsFor(resources));
    expect(matrix(results)).toEqual(original);
    // Never the passwords nor their hashes in the log.
    const logs = fg.logs.join('');
    for (const p of Object.values(PASSWORDS)) expect(logs).not.toContain(p);
    expect(logs).not.toMatch(/scrypt:\d+/);
  }, 600_000);

  it('a wrong password is refused as basic-auth refuses it', async () => {
    const r = await runOps(venv, fg!.url, 'alice', 'not-alice-password', [['get A', 'get_experiment', resources.exps['exp-a']]]);
    expect(answer(r['get A']!)).toBe('error: UNAUTHENTICATED');
  });
});
