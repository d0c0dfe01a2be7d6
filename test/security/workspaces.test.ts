import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonCaller } from '../helpers/admin-calls.js';
import { adminAuth, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';

/**
 * Issue 34, the attacker's view of workspaces: mallory is a member of ws-m only; ws-v is the victim's.
 * Every id and name attack is tried across workspaces — by the header, by ids that are global in
 * MLflow, by names that exist in both, by cached mappings, by the admin API and by the separator
 * flowgate stores workspace keys with — and none reaches what is in ws-v.
 */
const V2 = '/api/2.0/mlflow';
const V3 = '/api/3.0/mlflow';
const PROMPT_TAG = [{ key: 'mlflow.prompt.is_prompt', value: 'true' }];

describe('workspaces, attacked', () => {
  let mlflow: MlflowServer;
  let fg: TestFlowgate;
  const { basicOf, withTokens } = jsonCaller(() => fg.url);
  const send = (who: string, ws: string | string[] | undefined, method: string, path: string, body?: unknown) => {
    const headers = new Headers({ Authorization: who === 'admin' ? adminAuth() : basicOf(who), 'Content-Type': 'application/json' });
    for (const one of ws === undefined ? [] : Array.isArray(ws) ? ws : [ws]) headers.append('X-MLFLOW-WORKSPACE', one);
    return fetch(fg.url + path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  };
  const ok = async (who: string, ws: string | undefined, method: string, path: string, body?: unknown) => {
    const r = await send(who, ws, method, path, body);
    const json = (await r.json()) as Record<string, unknown>;
    if (!r.ok) throw new Error(`${who} ${method} ${path} in ${ws} → ${r.status} ${JSON.stringify(json)}`);
    return json;
  };
  const status = async (who: string, ws: string | string[] | undefined, method: string, path: string, body?: unknown) => (await send(who, ws, method, path, body)).status;
  let victimExperiment = '';
  let victimRun = '';

  beforeAll(async () => {
    mlflow = await startMlflowServer({ args: ['--enable-workspaces'] });
    // Members read what is in their workspace: the attacks must get nothing more from that.
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: mlflow.url, FLOWGATE_DEFAULT_PERMISSION: 'READ' });
    await withTokens(['victor', 'mallory']);
    for (const name of ['ws-v', 'ws-m']) await ok('admin', undefined, 'POST', `${V3}/workspaces`, { name });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-v/users`, { username: 'victor', permission: 'USE' });
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/users`, { username: 'mallory', permission: 'USE' });
    await ok('victor', 'ws-v', 'POST', `${V2}/registered-models/create`, { name: 'shared' });
    await ok('victor', 'ws-v', 'POST', `${V2}/registered-models/create`, { name: 'twin', tags: PROMPT_TAG });
    victimExperiment = String((await ok('victor', 'ws-v', 'POST', `${V2}/experiments/create`, { name: 'secret' })).experiment_id);
    victimRun = String(((await ok('victor', 'ws-v', 'POST', `${V2}/runs/create`, { experiment_id: victimExperiment })).run as { info: { run_id: string } }).info.run_id);
  }, 240_000);

  afterAll(async () => {
    await fg?.close();
    await mlflow?.stop();
  });

  it('the same name in her workspace gives her nothing on the victim\'s: creator MANAGE stays where it was made', async () => {
    await ok('mallory', 'ws-m', 'POST', `${V2}/registered-models/create`, { name: 'shared' });
    expect(await status('mallory', 'ws-m', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'mine' })).toBe(200);
    expect(await status('mallory', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'pwned' })).toBe(403);
    expect(await status('mallory', 'ws-v', 'DELETE', `${V2}/registered-models/delete`, { name: 'shared' })).toBe(403);
    expect(await status('mallory', 'ws-v', 'GET', `${V2}/registered-models/get?name=shared`)).toBe(403);
    // The victim's grant survived her create of the same name.
    expect(await status('victor', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'still mine' })).toBe(200);
  });

  it("a create in the default workspace keys its creator grant there, whichever pooled connection MLflow's answer came on", async () => {
    // Requests served in ws-v open connections to MLflow whose events run in ws-v's context; the
    // after-hook of a default-workspace create that answers on one must still act in the default workspace.
    const names = Array.from({ length: 8 }, (_, i) => `pooled-${i}`);
    for (const name of names) await ok('victor', 'ws-v', 'POST', `${V2}/registered-models/create`, { name });
    // Many connections opened while ws-v requests were served, then her creates among more of them.
    await Promise.all(Array.from({ length: 24 }, () => status('victor', 'ws-v', 'GET', `${V2}/registered-models/get?name=${names[0]}`)));
    await Promise.all([
      ...names.map((name) => ok('mallory', undefined, 'POST', `${V2}/registered-models/create`, { name })),
      ...Array.from({ length: 24 }, () => status('victor', 'ws-v', 'GET', `${V2}/registered-models/get?name=${names[0]}`)),
    ]);
    for (const name of names) {
      // Hers in the default workspace, as its creator; victor's in ws-v untouched, and nothing of hers there.
      expect(await status('mallory', undefined, 'PATCH', `${V2}/registered-models/update`, { name, description: 'mine' }), `${name} in default`).toBe(200);
      expect(await status('victor', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name, description: 'still mine' }), `${name} in ws-v`).toBe(200);
      expect(await status('mallory', 'ws-v', 'DELETE', `${V2}/registered-models/delete`, { name }), `${name} in ws-v`).toBe(403);
    }
  });

  it('ids MLflow keeps global (experiments, runs) answer nothing through her own workspace', async () => {
    for (const [method, path] of [
      ['GET', `${V2}/experiments/get?experiment_id=${victimExperiment}`],
      ['GET', `${V2}/runs/get?run_id=${victimRun}`],
      ['GET', `${V2}/metrics/get-history?run_id=${victimRun}&metric_key=m`],
      ['GET', `${V2}/artifacts/list?run_id=${victimRun}`],
    ] as const) {
      expect(await status('mallory', 'ws-m', method, path), path).not.toBe(200);
      expect(await status('mallory', 'ws-v', method, path), path).toBe(403);
    }
    expect(await status('mallory', 'ws-m', 'POST', `${V2}/runs/log-metric`, { run_id: victimRun, key: 'x', value: 1, timestamp: 0 })).not.toBe(200);
    const searched = await ok('mallory', 'ws-m', 'POST', `${V2}/experiments/search`, { max_results: 100 });
    expect(JSON.stringify(searched)).not.toContain('secret');
  });

  it("artifact paths under MLflow's workspaces/<ws>/ prefix reach only the request's own workspace's experiments", async () => {
    const ART = '/api/2.0/mlflow-artifacts';
    const SECRET = 'victor-secret-bytes';
    /** Sent byte for byte: fetch would resolve the dot segments itself. */
    const raw = (who: string, ws: string | undefined, method: string, path: string, body?: string) =>
      new Promise<{ status: number; text: string }>((resolve, reject) => {
        const { hostname, port } = new URL(fg.url);
        const req = request(
          { hostname, port, method, path, headers: { Authorization: basicOf(who), ...(ws === undefined ? {} : { 'X-MLFLOW-WORKSPACE': ws }) } },
          (res) => {
            let text = '';
            res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject).end(body);
      });
    const root = `workspaces/ws-v/${victimExperiment}/${victimRun}/artifacts`;
    const run = (await ok('victor', 'ws-v', 'GET', `${V2}/runs/get?run_id=${victimRun}`)).run as { info: { artifact_uri: string } };
    expect(run.info.artifact_uri).toBe(`mlflow-artifacts:/${root}`);
    // The victim writes and reads his run's file as his client does, under the prefix.
    expect((await raw('victor', 'ws-v', 'PUT', `${ART}/artifacts/${root}/secret.txt`, SECRET)).status).toBe(200);
    expect((await raw('victor', 'ws-v', 'GET', `${ART}/artifacts/${root}/secret.txt`)).text).toBe(SECRET);
    // Her own experiment under her own workspace's prefix works: the refusals below are the prefix's, not the route's.
    const mine = String((await ok('mallory', 'ws-m', 'POST', `${V2}/experiments/create`, { name: 'mine-artifacts' })).experiment_id);
    const myRun = String(((await ok('mallory', 'ws-m', 'POST', `${V2}/runs/create`, { experiment_id: mine })).run as { info: { run_id: string } }).info.run_id);
    expect((await raw('mallory', 'ws-m', 'PUT', `${ART}/artifacts/workspaces/ws-m/${mine}/${myRun}/artifacts/own.txt`, 'mine')).status).toBe(200);

    const answers: Array<{ status: number; text: string; what: string }> = [];
    const attempt = async (ws: string | undefined, method: string, path: string, body?: string) => {
      const answer = await raw('mallory', ws, method, path, body);
      answers.push({ ...answer, what: `${method} ${path} in ${ws ?? 'default'}` });
      return answer;
    };
    const list = (path: string) => `${ART}/artifacts?path=${encodeURIComponent(path)}`;
    // The victim's workspace's prefix from her own workspace (or the default one): MLflow's 400, before any decision.
    for (const ws of ['ws-m', undefined])
      for (const [method, path] of [
        ['GET', `${ART}/artifacts/${root}/secret.txt`],
        ['PUT', `${ART}/artifacts/${root}/planted.txt`],
        ['DELETE', `${ART}/artifacts/${root}/secret.txt`],
        ['GET', list(root)],
        ['POST', `${ART}/mpu/create/${root}/planted.bin`],
        ['GET', `${ART}/presigned/${root}/secret.txt`],
        // Encoded slashes are read as slashes: the same path.
        ['GET', `${ART}/artifacts/${root.replaceAll('/', '%2F')}%2Fsecret.txt`],
        ['GET', `${ART}/artifacts/workspaces%2fws-v%2f${victimExperiment}/${victimRun}/artifacts/secret.txt`],
        // Climbing out of her own prefix into the victim's.
        ['GET', `${ART}/artifacts/workspaces/${ws ?? 'default'}/../ws-v/${victimExperiment}/${victimRun}/artifacts/secret.txt`],
        ['GET', `${ART}/artifacts/workspaces/${ws ?? 'default'}/${mine}/../../ws-v/${victimExperiment}/${victimRun}/artifacts/secret.txt`],
        ['GET', `${ART}/artifacts/workspaces/${ws ?? 'default'}/%2e%2e/ws-v/${victimExperiment}/${victimRun}/artifacts/secret.txt`],
        ['GET', list(`workspaces/${ws ?? 'default'}/../ws-v/${victimExperiment}/${victimRun}/artifacts`)],
        // A prefix without an experiment: the workspace directories (and a workspace's experiment directories) are never listed.
        ['GET', list('workspaces')],
        ['GET', list('workspaces/')],
        ['GET', list('workspaces/ws-v')],
        ['GET', list(`workspaces/${ws ?? 'default'}`)],
        ['GET', list(`workspaces/${ws ?? 'default'}/`)],
        ['GET', list(`workspaces//${victimExperiment}/${victimRun}/artifacts`)],
      ] as const) {
        const answer = await attempt(ws, method, path, method === 'PUT' ? 'planted by mallory' : undefined);
        expect(answer.status, `${method} ${path} in ${ws}`).toBe(400);
        expect(JSON.parse(answer.text), `${method} ${path} in ${ws}`).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE' });
      }
    // In the victim's workspace, where the prefix is the request's own, she is no member: refused on the experiment.
    for (const [method, path] of [
      ['GET', `${ART}/artifacts/${root}/secret.txt`],
      ['PUT', `${ART}/artifacts/${root}/planted.txt`],
      ['GET', list(root)],
    ] as const)
      expect((await attempt('ws-v', method, path, method === 'PUT' ? 'planted by mallory' : undefined)).status, path).toBe(403);
    // The victim's experiment id under her own workspace's prefix names her workspace's directory, not his files.
    await attempt('ws-m', 'GET', `${ART}/artifacts/workspaces/ws-m/${victimExperiment}/${victimRun}/artifacts/secret.txt`);
    await attempt('ws-m', 'GET', list(`workspaces/ws-m/${victimExperiment}/${victimRun}/artifacts`));
    // Registering a version of her own model from his run's files.
    await ok('mallory', 'ws-m', 'POST', `${V2}/registered-models/create`, { name: 'from-victor' });
    for (const source of [`mlflow-artifacts:/${root}`, `mlflow-artifacts:/workspaces/ws-m/../ws-v/${victimExperiment}/${victimRun}/artifacts`]) {
      const made = await send('mallory', 'ws-m', 'POST', `${V2}/model-versions/create`, { name: 'from-victor', source });
      expect(made.status, source).toBe(403);
    }

    for (const answer of answers) expect(answer.text, answer.what).not.toContain(SECRET);
    // An answer may echo the path asked (MLflow's 404 does); none that succeeded names his files.
    for (const answer of answers) if (answer.status === 200) expect(answer.text, answer.what).not.toMatch(/secret\.txt|planted/);
    // His run's files are as he left them.
    const files = (await ok('victor', 'ws-v', 'GET', list(root))).files as Array<{ path: string }>;
    expect(files.map((f) => f.path)).toEqual(['secret.txt']);
    expect((await raw('victor', 'ws-v', 'GET', `${ART}/artifacts/${root}/secret.txt`)).text).toBe(SECRET);
  });

  it('a cached mapping of one workspace never decides in another (a prompt there, a model here)', async () => {
    // In ws-v `twin` is a prompt; in ws-m mallory makes `twin` a model and is granted nothing on prompts.
    expect(await status('victor', 'ws-v', 'GET', `${V2}/registered-models/get?name=twin`)).toBe(200);
    await ok('mallory', 'ws-m', 'POST', `${V2}/registered-models/create`, { name: 'twin' });
    expect(await status('mallory', 'ws-m', 'PATCH', `${V2}/registered-models/update`, { name: 'twin', description: 'a model here' })).toBe(200);
    expect(await status('mallory', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name: 'twin', description: 'pwned' })).toBe(403);
  });

  it('the workspace header cannot be smuggled: doubled, other case, unknown', async () => {
    expect(await status('mallory', ['ws-m', 'ws-v'], 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'x' })).toBe(400);
    expect(await status('mallory', ['ws-v', 'ws-m'], 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'x' })).toBe(400);
    expect(await status('mallory', 'WS-V', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'x' })).toBe(400);
    expect(await status('mallory', 'ws-none', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'x' })).toBe(404);
    expect((await ok('victor', 'ws-v', 'GET', `${V2}/registered-models/get?name=shared`)).registered_model).toMatchObject({ description: 'still mine' });
  });

  it("the store's workspace separator in a name is just a name: it reaches no other workspace's grants", async () => {
    const crafted = 'ws-v\u001fshared';
    const made = await send('mallory', 'ws-m', 'POST', `${V2}/registered-models/create`, { name: crafted });
    // Whether MLflow takes the name or not, the victim's `shared` stays out of her reach.
    expect([200, 400]).toContain(made.status);
    expect(await status('mallory', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'pwned' })).toBe(403);
    const grant = await send('admin', 'ws-m', 'POST', `${V2}/permissions/users/mallory/registered-models/${encodeURIComponent(crafted)}`, { permission: 'MANAGE' });
    expect(grant.status).toBe(400);
    const pattern = await send('admin', 'ws-m', 'POST', `${V2}/permissions/users/mallory/patterns`, { resource_type: 'registered_model', pattern: 'ws-v\u001f*', permission: 'MANAGE' });
    expect(pattern.status).toBe(400);
  });

  it('a pattern grant made in her workspace matches only its names', async () => {
    await ok('admin', 'ws-m', 'POST', `${V2}/permissions/users/mallory/patterns`, { resource_type: 'registered_model', pattern: '*', permission: 'MANAGE' });
    expect(await status('mallory', 'ws-m', 'DELETE', `${V2}/registered-models/delete`, { name: 'twin' })).toBe(200);
    expect(await status('mallory', 'ws-v', 'DELETE', `${V2}/registered-models/delete`, { name: 'shared' })).toBe(403);
  });

  it("a pattern grant made in a workspace goes with the membership: once she is no member, it gives her nothing there", async () => {
    // Given while she was a member of ws-v (say, a team's read-everything pattern); then her membership is removed.
    await ok('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-v/users`, { username: 'mallory', permission: 'USE' });
    await ok('admin', 'ws-v', 'POST', `${V2}/permissions/users/mallory/patterns`, { resource_type: 'registered_model', pattern: 'shared*', permission: 'EDIT' });
    expect(await status('mallory', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'as a member' })).toBe(200);
    await ok('admin', undefined, 'DELETE', `${V3}/permissions/workspaces/ws-v/users/mallory`);
    expect(await status('mallory', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'as an outsider' })).toBe(403);
    expect(await status('mallory', 'ws-v', 'GET', `${V2}/registered-models/get?name=shared`)).toBe(403);
    // What explain says agrees with the gate.
    const q = new URLSearchParams({ username: 'mallory', method: 'GET', path: `${V2}/registered-models/get?name=shared` });
    const explained = (await ok('admin', 'ws-v', 'GET', `${V2}/permissions/explain?${q}`)) as { verdict: { allow: boolean }; resources: Array<{ effective: string; rule: string }> };
    expect(explained.verdict.allow).toBe(false);
    expect(explained.resources.map((r) => `${r.effective} ${r.rule}`)).toEqual(['NO_PERMISSIONS workspace-non-member']);
  });

  it("her grants' admin routes act in the header's workspace: managing her own `shared` does not manage the victim's", async () => {
    expect(await status('mallory', 'ws-m', 'POST', `${V2}/permissions/users/victor/registered-models/shared`, { permission: 'READ' })).toBe(201);
    expect(await status('mallory', 'ws-v', 'POST', `${V2}/permissions/users/mallory/registered-models/shared`, { permission: 'MANAGE' })).toBe(403);
    expect(await status('mallory', 'ws-v', 'GET', `${V2}/permissions/registered-models/shared/users`)).toBe(403);
  });

  it('membership cannot be taken: not by a member, not across workspaces, not by creating workspaces', async () => {
    expect(await status('mallory', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/users`, { username: 'victor', permission: 'USE' })).toBe(403);
    expect(await status('mallory', undefined, 'PATCH', `${V3}/permissions/workspaces/ws-m/users/mallory`, { permission: 'MANAGE' })).toBe(403);
    expect(await status('mallory', undefined, 'POST', `${V2}/permissions/users/mallory/workspaces/ws-v`, { permission: 'USE' })).toBe(403);
    expect(await status('mallory', undefined, 'GET', `${V3}/permissions/workspaces/ws-v/users`)).toBe(403);
    expect(await status('mallory', undefined, 'POST', `${V3}/workspaces`, { name: 'ws-x' })).toBe(403);
    expect(await status('mallory', undefined, 'DELETE', `${V3}/workspaces/ws-v`)).toBe(403);
    expect(await status('mallory', undefined, 'PATCH', `${V3}/workspaces/ws-v`, { description: 'x' })).toBe(403);
    // Bad input changes nothing and says why in MLflow's shape.
    const bad = await send('admin', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/users`, { username: 'victor', permission: 'READ' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE' });
    const members = await ok('admin', undefined, 'GET', `${V3}/permissions/workspaces/ws-m/users`);
    expect((members.users as Array<{ username: string }>).map((u) => u.username)).toEqual(['mallory']);
  });

  it("a workspace's administrator manages its members and grants, and nothing in another workspace", async () => {
    await ok('admin', undefined, 'PATCH', `${V3}/permissions/workspaces/ws-m/users/mallory`, { permission: 'MANAGE' });
    expect(await status('mallory', undefined, 'POST', `${V3}/permissions/workspaces/ws-m/users`, { username: 'victor', permission: 'USE' })).toBe(201);
    const members = await ok('mallory', undefined, 'GET', `${V3}/permissions/workspaces/ws-m/users`);
    expect((members.users as Array<{ username: string; permission: string }>).map((u) => `${u.username}:${u.permission}`).sort()).toEqual(['mallory:MANAGE', 'victor:USE']);
    expect(await status('mallory', undefined, 'POST', `${V3}/permissions/workspaces/ws-v/users`, { username: 'mallory', permission: 'USE' })).toBe(403);
    expect(await status('mallory', 'ws-v', 'PATCH', `${V2}/registered-models/update`, { name: 'shared', description: 'pwned' })).toBe(403);
    expect(await status('mallory', undefined, 'DELETE', `${V3}/permissions/workspaces/ws-m/users/victor`)).toBe(200);
    // Her own view of her rights on the workspaces, asked from the one she runs, is the gate's: nothing on ws-v.
    const mine = (await ok('mallory', 'ws-m', 'GET', `${V2}/permissions/ui/my-permissions/workspaces?id=ws-v&id=ws-m`)) as { permissions: Record<string, { permission: string }> };
    expect(mine.permissions['ws-m']?.permission).toBe('MANAGE');
    expect(mine.permissions['ws-v']?.permission ?? 'NO_PERMISSIONS').toBe('NO_PERMISSIONS');
    expect(await status('mallory', 'ws-m', 'GET', `${V3}/workspaces/ws-v`)).toBe(403);
  });

  it('explain, asked in the victim\'s workspace, tells a non-member nothing; in her own it explains, as the gate decides', async () => {
    const explain = async (ws: string, path: string) => {
      const r = await send('mallory', ws, 'GET', `${V2}/permissions/explain?${new URLSearchParams({ method: 'GET', path })}`);
      return { status: r.status, json: (await r.json()) as Record<string, unknown> };
    };
    const hidden = await explain('ws-v', `${V2}/registered-models/get?name=shared`);
    const missing = await explain('ws-v', `${V2}/registered-models/get?name=no-such-model`);
    expect(hidden.json.verdict).toMatchObject({ allow: false, reason: 'not-readable' });
    expect(hidden).toEqual(missing);
    const own = await explain('ws-m', `${V2}/registered-models/get?name=shared`);
    expect(own.json.verdict).toMatchObject({ allow: true });
    // As an administrator would see it: her standing in ws-v decides, not the default permission.
    const asAdmin = await send('admin', 'ws-v', 'GET', `${V2}/permissions/explain?${new URLSearchParams({ username: 'mallory', method: 'GET', path: `${V2}/registered-models/get?name=shared` })}`);
    const body = (await asAdmin.json()) as { verdict: { allow: boolean; reason: string }; resources: Array<{ rule: string; effective: string }> };
    expect(body.verdict).toMatchObject({ allow: false, reason: 'workspace-non-member' });
    expect(body.resources[0]).toMatchObject({ rule: 'workspace-non-member', effective: 'NO_PERMISSIONS' });
  });
});
