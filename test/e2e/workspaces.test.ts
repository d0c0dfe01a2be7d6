import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { ADMIN, adminAuth, removeDir, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { runPython, startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runAdminCli } from '../../src/commands/admin-cli/run.js';
import { runPolicy } from '../../src/commands/policy.js';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeconfigWithToken, newKey, serviceAccountClaims, signWith, startLocalIssuer, type IssuerKey, type LocalIssuer } from '../helpers/jwt-issuers.js';

/**
 * Issue 34: flowgate in front of MLflow 3.17.2 run with `--enable-workspaces`. Names are unique only
 * inside a workspace, so every grant is kept in the workspace it was made in; membership (USE) gives
 * the default permission there and the right to create, and only members see a workspace listed.
 */
const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';
const grantOn = (who: string, kind: string, id: string) => `${V2}/permissions/users/${who}/${kind}/${encodeURIComponent(id)}`;

describe('MLflow workspaces behind flowgate', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  let idp: LocalIssuer;
  let clusterKey: IssuerKey;
  let dir = '';
  const AUD = 'flowgate';
  const CLUSTER = 'https://kubernetes.default.svc.cluster.local';
  const { tokens, basicOf, withTokens } = jsonCaller(() => fg.url);

  const as = (who: string, workspace: string | undefined, method: string, path: string, body?: unknown) =>
    fetch(fg.url + path, {
      method,
      headers: {
        Authorization: who === 'admin' ? adminAuth() : basicOf(who),
        'Content-Type': 'application/json',
        ...(workspace === undefined ? {} : { 'X-MLFLOW-WORKSPACE': workspace }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const status = async (who: string, ws: string | undefined, method: string, path: string, body?: unknown) => (await as(who, ws, method, path, body)).status;
  const ok = async (who: string, ws: string | undefined, method: string, path: string, body?: unknown) => {
    const r = await as(who, ws, method, path, body);
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${who} ${method} ${path} in ${ws} → ${r.status} ${JSON.stringify(json)}`);
    return json;
  };
  const member = (who: string, ws: string, permission: 'USE' | 'MANAGE') => ok('admin', undefined, 'POST', grantOn(who, 'workspaces', ws), { permission });

  beforeAll(async () => {
    mlflow = await startMlflowServer({ args: ['--enable-workspaces'] });
    // Members read what is in their workspace at the default permission: READ here.
    idp = await startLocalIssuer();
    clusterKey = await newKey('cluster-key');
    dir = mkdtempSync(join(tmpdir(), 'flowgate-ws-'));
    writeFileSync(join(dir, 'cluster-jwks.json'), JSON.stringify({ keys: [clusterKey.publicJwk] }));
    fg = await startTestFlowgate({
      FLOWGATE_UPSTREAM_URL: mlflow.url,
      FLOWGATE_DEFAULT_PERMISSION: 'READ',
      FLOWGATE_BEARER_ISSUERS: JSON.stringify([
        { issuer: idp.issuer, audience: AUD },
        { kind: 'kubernetes', issuer: CLUSTER, audience: AUD, jwks_file: join(dir, 'cluster-jwks.json') },
      ]),
      // An identity provider's `team-*` groups are members of the workspace of the same name, and a
      // Kubernetes namespace's service accounts (group `k8s:<namespace>`) of the namespace's workspace.
      FLOWGATE_WORKSPACE_GROUP_RULES: 'team-*=team-*, k8s:*=*',
    });
    await withTokens(['ann', 'bob', 'cat', 'dan']);
    for (const name of ['ws-a', 'ws-b']) await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name });
    await member('ann', 'ws-a', 'USE');
    await member('bob', 'ws-b', 'USE');
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await idp?.close();
    await mlflow?.stop();
    if (dir) removeDir(dir);
  });

  it('a bad or unknown workspace gets MLflow\'s own error, before anything is decided', async () => {
    const unknown = await as('ann', 'nope', 'GET', `${V2}/registered-models/get?name=foo`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ error_code: 'RESOURCE_DOES_NOT_EXIST', message: "Workspace 'nope' not found" });
    const bad = await as('ann', 'Bad Name!', 'POST', `${V2}/registered-models/create`, { name: 'x' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE' });
    // Nothing was made anywhere.
    expect(await status('admin', 'default', 'GET', `${V2}/registered-models/get?name=x`)).toBe(404);
  });

  it('only members create in a workspace', async () => {
    const refused = await as('cat', 'ws-b', 'POST', `${V2}/registered-models/create`, { name: 'foo' });
    expect(refused.status).toBe(403);
    expect(await status('admin', 'ws-b', 'GET', `${V2}/registered-models/get?name=foo`)).toBe(404);
    expect(await status('cat', 'ws-a', 'POST', `${V2}/experiments/create`, { name: 'cats' })).toBe(403);
  });

  it("a create in ws-b leaves ws-a's grants on the same name in place, and the creator's MANAGE stays in its workspace", async () => {
    await ok('ann', 'ws-a', 'POST', `${V2}/registered-models/create`, { name: 'foo' });
    await ok('admin', 'ws-a', 'POST', grantOn('dan', 'registered-models', 'foo'), { permission: 'READ' });
    await ok('bob', 'ws-b', 'POST', `${V2}/registered-models/create`, { name: 'foo' });

    // ws-a's grants are untouched by the create of ws-b's `foo` (no stale-grant pruning across workspaces).
    expect(await ok('admin', 'ws-a', 'GET', grantOn('ann', 'registered-models', 'foo'))).toEqual({
      permission: { resource_type: 'registered_model', name: 'foo', username: 'ann', permission: 'MANAGE', workspace: 'ws-a' },
    });
    expect(await ok('admin', 'ws-a', 'GET', grantOn('dan', 'registered-models', 'foo'))).toMatchObject({ permission: { permission: 'READ' } });
    // Each creator manages their own `foo` only.
    expect(await ok('admin', 'ws-b', 'GET', grantOn('bob', 'registered-models', 'foo'))).toMatchObject({ permission: { permission: 'MANAGE' } });
    expect(await status('admin', 'ws-b', 'GET', grantOn('ann', 'registered-models', 'foo'))).toBe(404);
    expect(await status('admin', 'ws-a', 'GET', grantOn('bob', 'registered-models', 'foo'))).toBe(404);

    // ann is made a member of ws-b: she reads its `foo` at the default permission, but may not delete it.
    await member('ann', 'ws-b', 'USE');
    expect(await status('ann', 'ws-b', 'GET', `${V2}/registered-models/get?name=foo`)).toBe(200);
    expect(await status('ann', 'ws-b', 'DELETE', `${V2}/registered-models/delete`, { name: 'foo' })).toBe(403);
    expect(await status('ann', 'ws-a', 'PATCH', `${V2}/registered-models/update`, { name: 'foo', description: 'mine' })).toBe(200);
  });

  it("a grant on ws-a's foo does not open ws-b's foo", async () => {
    // dan is a member of neither: his grant decides in ws-a alone.
    expect(await status('dan', 'ws-a', 'GET', `${V2}/registered-models/get?name=foo`)).toBe(200);
    expect(await status('dan', 'ws-b', 'GET', `${V2}/registered-models/get?name=foo`)).toBe(403);
    expect(await status('cat', 'ws-a', 'GET', `${V2}/registered-models/get?name=foo`)).toBe(403);
  });

  it("a member's search shows their experiments, and a non-member's shows nothing of the workspace", async () => {
    const made = await ok('ann', 'ws-a', 'POST', `${V2}/experiments/create`, { name: 'ann-exp' });
    const names = async (who: string, ws: string) =>
      (((await ok(who, ws, 'POST', `${V2}/experiments/search`, { max_results: 100 })).experiments ?? []) as Array<{ name: string }>).map((e) => e.name);
    expect(await names('ann', 'ws-a')).toContain('ann-exp');
    expect(await names('cat', 'ws-a')).toEqual([]);
    expect(await names('bob', 'ws-b')).not.toContain('ann-exp');
    // The experiment's id is global, but from another workspace it is not there.
    expect(await status('ann', 'ws-b', 'GET', `${V2}/experiments/get?experiment_id=${String(made.experiment_id)}`)).not.toBe(200);
  });

  it('the workspace list shows the caller\'s workspaces only', async () => {
    const listed = async (who: string) => (((await ok(who, undefined, 'GET', `${V3}/workspaces`)).workspaces ?? []) as Array<{ name: string }>).map((w) => w.name).sort();
    expect(await listed('admin')).toEqual(['default', 'ws-a', 'ws-b']);
    expect(await listed('ann')).toEqual(['default', 'ws-a', 'ws-b']);
    expect(await listed('bob')).toEqual(['default', 'ws-b']);
    expect(await listed('cat')).toEqual(['default']);
    expect(await status('cat', undefined, 'GET', `${V3}/workspaces/ws-a`)).toBe(403);
    expect(await status('ann', undefined, 'GET', `${V3}/workspaces/ws-a`)).toBe(200);
    expect(await status('ann', undefined, 'POST', `${V3}/workspaces`, { name: 'ws-c' })).toBe(403);
  });

  it('a workspace administrator (MANAGE) manages everything in it', async () => {
    await member('dan', 'ws-b', 'MANAGE');
    expect(await status('dan', 'ws-b', 'PATCH', `${V2}/registered-models/update`, { name: 'foo', description: 'by the admin of ws-b' })).toBe(200);
    expect(await status('dan', 'ws-a', 'PATCH', `${V2}/registered-models/update`, { name: 'foo', description: 'not his' })).toBe(403);
    // It manages the grants inside it, through the admin API, in that workspace only.
    expect(await status('dan', 'ws-b', 'POST', grantOn('cat', 'registered-models', 'foo'), { permission: 'READ' })).toBe(201);
    expect(await status('dan', 'ws-a', 'POST', grantOn('cat', 'registered-models', 'foo'), { permission: 'READ' })).toBe(403);
    expect(await status('admin', 'ws-b', 'DELETE', grantOn('cat', 'registered-models', 'foo'))).toBe(200);
  });

  it("a rename moves the grants in its workspace only, and the other workspace's same name keeps its own", async () => {
    await ok('ann', 'ws-a', 'POST', `${V2}/registered-models/create`, { name: 'old-name' });
    await ok('bob', 'ws-b', 'POST', `${V2}/registered-models/create`, { name: 'old-name' });
    await ok('ann', 'ws-a', 'POST', `${V2}/registered-models/rename`, { name: 'old-name', new_name: 'new-name' });
    expect(await ok('admin', 'ws-a', 'GET', grantOn('ann', 'registered-models', 'new-name'))).toMatchObject({ permission: { permission: 'MANAGE' } });
    expect(await status('admin', 'ws-a', 'GET', grantOn('ann', 'registered-models', 'old-name'))).toBe(404);
    expect(await ok('admin', 'ws-b', 'GET', grantOn('bob', 'registered-models', 'old-name'))).toMatchObject({ permission: { permission: 'MANAGE' } });
    // Deleting ws-a's renamed model drops its grants there alone.
    expect(await status('ann', 'ws-a', 'DELETE', `${V2}/registered-models/delete`, { name: 'new-name' })).toBe(200);
    expect(await status('admin', 'ws-a', 'GET', grantOn('ann', 'registered-models', 'new-name'))).toBe(404);
    expect(await status('bob', 'ws-b', 'PATCH', `${V2}/registered-models/update`, { name: 'old-name', description: 'still his' })).toBe(200);
  });

  it('the Python client with MLFLOW_WORKSPACE set works in the member\'s workspace, and is refused elsewhere', async () => {
    const script = `
import mlflow
mlflow.set_experiment("py-exp")
with mlflow.start_run() as run:
    mlflow.log_metric("m", 1.0)
print(mlflow.get_experiment_by_name("py-exp").experiment_id)
`;
    const env = (ws: string) => ({ MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: 'ann', MLFLOW_TRACKING_PASSWORD: tokens.ann!, MLFLOW_WORKSPACE: ws });
    const inA = await runPython(mlflow.venv, script, env('ws-a'));
    expect(inA.code, inA.stderr).toBe(0);
    const refused = await runPython(mlflow.venv, script, { ...env('ws-b'), MLFLOW_TRACKING_USERNAME: 'cat', MLFLOW_TRACKING_PASSWORD: tokens.cat! });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/PERMISSION_DENIED|403/);
  }, 120_000);

  it("a member's Python client logs, lists and reads an artifact under MLflow's workspaces/<ws>/ root, and registers a version from it", async () => {
    // MLflow roots each experiment's served artifacts at workspaces/<ws>/<experiment id>, the default workspace's too.
    const script = (ws: string) => `
import os, mlflow
from mlflow import MlflowClient
mlflow.set_experiment("py-artifacts-${ws}")
with mlflow.start_run() as run:
    mlflow.log_text("hello from ${ws}", "hello.txt")
    mlflow.log_text("flavors: {}", "model/MLmodel")
client = MlflowClient()
print("ROOT", run.info.artifact_uri)
print("LISTED", sorted(f.path for f in client.list_artifacts(run.info.run_id)))
print("READ", open(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="hello.txt")).read())
client.create_registered_model("from-run-${ws}")
version = client.create_model_version("from-run-${ws}", f"{run.info.artifact_uri}/model", run_id=run.info.run_id)
print("SOURCE", version.source)
path = mlflow.artifacts.download_artifacts(f"models:/from-run-${ws}/{version.version}")
print("VERSION", sorted(os.listdir(path)))
`;
    for (const ws of ['ws-a', 'default']) {
      const out = await runPython(mlflow.venv, script(ws), { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: 'ann', MLFLOW_TRACKING_PASSWORD: tokens.ann!, MLFLOW_WORKSPACE: ws });
      expect(out.code, out.stderr).toBe(0);
      const line = (key: string) => out.stdout.split('\n').find((l) => l.startsWith(`${key} `))?.slice(key.length + 1);
      expect(line('ROOT'), ws).toMatch(new RegExp(`^mlflow-artifacts:/workspaces/${ws}/[0-9]+/[0-9a-f]{32}/artifacts$`));
      expect(line('LISTED'), ws).toBe("['hello.txt', 'model']");
      expect(line('READ'), ws).toBe(`hello from ${ws}`);
      expect(line('SOURCE'), ws).toBe(`${line('ROOT')}/model`);
      expect(line('VERSION'), ws).toContain("'MLmodel'");
    }
    // Not through another workspace's root: cat, no member of ws-a, reads nothing of ann's run there.
    const root = `workspaces/ws-a/${(await ok('ann', 'ws-a', 'GET', `${V2}/experiments/get-by-name?experiment_name=py-artifacts-ws-a`) as { experiment: { experiment_id: string } }).experiment.experiment_id}`;
    expect(await status('cat', 'ws-a', 'GET', `/api/2.0/mlflow-artifacts/artifacts?path=${root}`)).toBe(403);
    expect(await status('ann', 'ws-b', 'GET', `/api/2.0/mlflow-artifacts/artifacts?path=${root}`)).toBe(400);
  }, 120_000);

  it('the CLI reads and makes grants in the workspace it names (--workspace, or MLFLOW_WORKSPACE)', async () => {
    const cli = async (argv: string[], env: Record<string, string> = {}) => {
      let out = '';
      let err = '';
      const code = await runAdminCli(argv[0]!, argv.slice(1), {
        out: (t: string) => void (out += t),
        err: (t: string) => void (err += t),
        env: { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token, ...env },
      } as never);
      return { code, out, err };
    };
    const set = await cli(['grants', 'set', '--user', 'cat', 'model', 'foo', 'EDIT', '--workspace', 'ws-b']);
    expect(set.code, set.err).toBe(0);
    expect(await status('cat', 'ws-b', 'PATCH', `${V2}/registered-models/update`, { name: 'foo', description: 'by cat' })).toBe(200);
    expect(await status('cat', 'ws-a', 'PATCH', `${V2}/registered-models/update`, { name: 'foo', description: 'by cat' })).toBe(403);
    const inB = await cli(['grants', 'list', '--user', 'cat', '--kind', 'model', '--json'], { MLFLOW_WORKSPACE: 'ws-b' });
    expect(inB.code, inB.err).toBe(0);
    expect(inB.out).toContain('foo');
    const inA = await cli(['grants', 'list', '--user', 'cat', '--kind', 'model', '--json'], { MLFLOW_WORKSPACE: 'ws-a' });
    expect(inA.out).not.toContain('foo');
  });

  it('mlflow-oidc-auth\'s workspace member routes give and take membership', async () => {
    const base = `${V3}/permissions/workspaces/ws-a`;
    expect(await status('cat', 'ws-a', 'POST', `${V2}/experiments/create`, { name: 'cats-2' })).toBe(403);
    expect((await as('admin', undefined, 'POST', `${base}/groups`, { group_name: 'cats', permission: 'USE' })).status).toBe(201);
    await ok('admin', undefined, 'POST', `${V2}/permissions/groups/cats/users`, { username: 'cat' });
    expect(await status('cat', 'ws-a', 'POST', `${V2}/experiments/create`, { name: 'cats-2' })).toBe(200);
    expect(await ok('admin', undefined, 'GET', `${base}/groups`)).toEqual({ groups: [{ workspace: 'ws-a', group_name: 'cats', permission: 'USE' }] });
    expect(await status('admin', undefined, 'DELETE', `${base}/groups/cats`)).toBe(200);
    expect(await status('cat', 'ws-a', 'POST', `${V2}/experiments/create`, { name: 'cats-3' })).toBe(403);
  });

  it("a group→workspace rule admits a signed-in member of the identity provider's group, with no per-user set-up", async () => {
    await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name: 'team-ml' });
    const now = Math.floor(Date.now() / 1000);
    const token = await idp.sign({ iss: idp.issuer, aud: AUD, sub: 'erin-sub', preferred_username: 'erin', groups: ['team-ml'], iat: now, exp: now + 300 });
    const bearer = (ws: string, method: string, path: string, body?: unknown) =>
      fetch(fg.url + path, {
        method,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'X-MLFLOW-WORKSPACE': ws },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    expect((await bearer('team-ml', 'POST', `${V2}/experiments/create`, { name: 'erins' })).status).toBe(200);
    expect((await bearer('ws-a', 'POST', `${V2}/experiments/create`, { name: 'erins' })).status).toBe(403);
    const listed = ((await (await bearer('default', 'GET', `${V3}/workspaces`)).json()) as { workspaces: Array<{ name: string }> }).workspaces.map((w) => w.name);
    expect(listed.sort()).toEqual(['default', 'team-ml']);
    // The rule's grant is an ordinary one, on the group, audited by the rule.
    expect(await ok('admin', undefined, 'GET', `${V3}/permissions/workspaces/team-ml/groups`)).toEqual({ groups: [{ workspace: 'team-ml', group_name: 'team-ml', permission: 'USE' }] });
  });

  it('a policy file carries every workspace: export, lose a grant in ws-b, apply gives it back, a second apply changes nothing', async () => {
    await ok('admin', 'ws-b', 'POST', `${V2}/permissions/users/ann/patterns`, { resource_type: 'registered_model', pattern: 'b-*', permission: 'READ' });
    const policy = async (argv: string[], stdin = '') => {
      let out = '';
      let err = '';
      const code = await runPolicy(argv, {
        out: (t: string) => void (out += t),
        err: (t: string) => void (err += t),
        readFile: async () => stdin,
        env: { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token },
      } as never);
      return { code, out, err };
    };
    const exported = await policy(['export']);
    expect(exported.code, exported.err).toBe(0);
    // ws-a's and ws-b's `foo` are two grants, each naming its workspace; membership is in none.
    expect(exported.out).toMatch(/registered_model: foo\n\s+in_workspace: ws-a\n\s+user: ann\n\s+permission: MANAGE/);
    expect(exported.out).toMatch(/registered_model: foo\n\s+in_workspace: ws-b\n\s+user: bob\n\s+permission: MANAGE/);
    expect(exported.out).toMatch(/workspace: ws-a\n\s+user: ann\n\s+permission: USE/);
    expect(exported.out).toMatch(/pattern: b-\*\n\s+in_workspace: ws-b\n\s+user: ann/);

    expect(await status('admin', 'ws-b', 'DELETE', grantOn('bob', 'registered-models', 'foo'))).toBe(200);
    expect(await status('admin', 'ws-a', 'GET', grantOn('ann', 'registered-models', 'foo'))).toBe(200);
    const applied = await policy(['apply', '-'], exported.out);
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out.trim()).toBe('+ grant workspace:ws-b registered_model:foo user:bob MANAGE');
    expect(await ok('admin', 'ws-b', 'GET', grantOn('bob', 'registered-models', 'foo'))).toMatchObject({ permission: { permission: 'MANAGE', workspace: 'ws-b' } });
    const again = await policy(['apply', '-'], exported.out);
    expect(again.out).toBe('');
    expect(again.err).toContain('no changes');
  });

  it("MLFLOW_TRACKING_AUTH=kubernetes-namespaced: a pod's token acts in its namespace's workspace, with no Secret and no per-user set-up", async () => {
    const venv = await new Promise<string>((resolve, reject) =>
      execFile('bash', [join(process.cwd(), 'scripts/mlflow-kubernetes.sh')], { timeout: 900_000 }, (error, stdout, stderr) =>
        error ? reject(new Error(`${error.message}\n${stderr}`)) : resolve(stdout.trim().split('\n').pop()!),
      ),
    );
    await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name: 'team-k8s' });
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, kubeconfigWithToken(await signWith(clusterKey, serviceAccountClaims(CLUSTER, 'team-k8s', 'runner', AUD)), 'team-k8s'));
    const script = `
import mlflow
eid = mlflow.create_experiment("pipeline-exp")
print("@@", eid)
`;
    const made = await runPython(venv, script, { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_AUTH: 'kubernetes-namespaced', KUBECONFIG: kubeconfig });
    expect(made.code, made.stderr.slice(-2000)).toBe(0);
    const id = made.stdout.split('@@ ')[1]!.trim();
    // It was made in team-k8s (the namespace the client sent), and the pod's account manages it there.
    expect(await status('admin', 'team-k8s', 'GET', `${V2}/experiments/get?experiment_id=${id}`)).toBe(200);
    expect(await status('admin', 'default', 'GET', `${V2}/experiments/get?experiment_id=${id}`)).not.toBe(200);
    expect(await ok('admin', undefined, 'GET', `${V3}/permissions/workspaces/team-k8s/groups`)).toEqual({ groups: [{ workspace: 'team-k8s', group_name: 'k8s:team-k8s', permission: 'USE' }] });
    // In another workspace it is no member: no create.
    const elsewhere = await runPython(venv, script, { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_AUTH: 'kubernetes', KUBECONFIG: kubeconfig, MLFLOW_WORKSPACE: 'ws-a' });
    expect(elsewhere.code).not.toBe(0);
    expect(elsewhere.stderr).toMatch(/PERMISSION_DENIED|403/);
  }, 900_000);
});
