import request from 'supertest';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../src/commands/admin-cli/output.js';
import { runTeamSetup } from '../../src/commands/team-setup.js';
import { ADMIN, adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

/** The spec's shared team setup, steps 1-5, over HTTP only; then a restart loses nothing. */
describe('shared team setup (spec §1)', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  const api = () => request(fg.url);
  const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z');

  beforeAll(async () => {
    upstream = await startStubUpstream((r) =>
      r.url.endsWith('/experiments/create') ? { status: 200, body: { experiment_id: '17' } } : { status: 200, body: {} },
    );
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_BASE_PATH: '/mlflow' });
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  it('walks steps 1-5, rotates the token, and survives a restart', async () => {
    // 1. the shared resource, created through flowgate in front of the upstream
    const exp = await api().post('/mlflow/api/2.0/mlflow/experiments/create').set('Authorization', adminAuth()).send({ name: 'team-a-shared' });
    expect(exp.status).toBe(200);
    const experimentId = exp.body.experiment_id as string;
    expect(upstream.seen.at(-1)).toMatchObject({ method: 'POST', url: '/api/2.0/mlflow/experiments/create' });
    expect(JSON.parse(upstream.seen.at(-1)!.body)).toEqual({ name: 'team-a-shared' });

    // 2. grant the team group (the group exists once its first member logged in; here an admin makes it)
    await api().post('/mlflow/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth()).send({ group_name: 'team-a' });
    const grant = await api()
      .post(`/mlflow/api/2.0/mlflow/permissions/groups/team-a/experiments/${experimentId}`)
      .set('Authorization', adminAuth())
      .send({ permission: 'EDIT' });
    expect(grant.status).toBe(201);

    // 3. the service account
    const sa = await api()
      .post('/mlflow/api/2.0/mlflow/users/create')
      .set('Authorization', adminAuth())
      .send({ username: 'team-a-pipelines', display_name: 'Team A pipelines', is_admin: false, is_service_account: true });
    expect(sa.status).toBe(201);

    // 4. its token, with an expiration
    const mint = () =>
      api()
        .patch('/mlflow/api/2.0/mlflow/permissions/users/access-token')
        .set('Authorization', adminAuth())
        .send({ username: 'team-a-pipelines', expiration: inDays(180) });
    const first = (await mint()).body.token as string;
    const current = () => api().get('/mlflow/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('team-a-pipelines', first));
    expect((await current()).status).toBe(200);

    // 5. the secret's three values work as the Python client sends them (Basic on every request)
    const env = { MLFLOW_TRACKING_URI: `${fg.url}/mlflow/`, MLFLOW_TRACKING_USERNAME: 'team-a-pipelines', MLFLOW_TRACKING_PASSWORD: first };
    const viaUri = await request(env.MLFLOW_TRACKING_URI.replace(/\/$/, ''))
      .get('/api/2.0/mlflow/permissions/users/current')
      .set('Authorization', basic(env.MLFLOW_TRACKING_USERNAME, env.MLFLOW_TRACKING_PASSWORD));
    expect(viaUri.body.user.username).toBe('team-a-pipelines');

    // generating a new token invalidates the previous one at once
    const second = (await mint()).body.token as string;
    expect(second).not.toBe(first);
    expect((await current()).status).toBe(401);
    expect((await api().get('/mlflow/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('team-a-pipelines', second))).status).toBe(200);

    // a restart keeps users, groups, grants and tokens
    fg = await fg.restart();
    const afterRestart = await api().get('/mlflow/api/2.0/mlflow/permissions/users/current').set('Authorization', basic('team-a-pipelines', second));
    expect(afterRestart.status).toBe(200);
    expect((await current()).status).toBe(401);
    const grants = await api().get(`/mlflow/api/2.0/mlflow/permissions/experiments/${experimentId}/groups`).set('Authorization', adminAuth());
    expect(grants.body.groups).toEqual([expect.objectContaining({ group_name: 'team-a', permission: 'EDIT' })]);
  });

  it('serves nothing outside the base path', async () => {
    const res = await api().get('/api/2.0/mlflow/permissions/users').set('Authorization', adminAuth());
    expect(res.status).toBe(404);
  });
});

/** MLflow's experiments as far as team-setup asks: create, get by id, get by name (ids from 100). */
function experimentsUpstream(byName: Map<string, string>) {
  let next = 100;
  const missing = { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'No such experiment' } };
  return (r: SeenRequest) => {
    const url = new URL(r.url, 'http://mlflow');
    if (url.pathname.endsWith('/experiments/create')) {
      const id = String(next++);
      byName.set((JSON.parse(r.body) as { name: string }).name, id);
      return { status: 200, body: { experiment_id: id } };
    }
    const found = url.pathname.endsWith('/experiments/get-by-name')
      ? [...byName].find(([name]) => name === url.searchParams.get('experiment_name'))
      : url.pathname.endsWith('/experiments/get')
        ? [...byName].find(([, id]) => id === url.searchParams.get('experiment_id'))
        : undefined;
    if (found) return { status: 200, body: { experiment: { experiment_id: found[1], name: found[0], lifecycle_stage: 'active' } } };
    return url.pathname.includes('/experiments/get') ? missing : { status: 200, body: {} };
  };
}

/** `flowgate team-setup` in this process, as the admin, against the test flowgate. */
async function teamSetupAt(url: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    env: { MLFLOW_TRACKING_URI: url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token },
    out: (t) => void (stdout += t),
    err: (t) => void (stderr += t),
    readFile: () => Promise.reject(new Error('no files here')),
  };
  const code = await runTeamSetup(args, io);
  return { code, stdout, stderr };
}

describe('team-setup and a service account that exists already', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  const experiments = new Map<string, string>();
  const api = () => request(fg.url);
  const expires = new Date(Date.now() + 30 * 86_400_000).toISOString();
  const teamSetup = (args: string[]) => teamSetupAt(fg.url, [...args, '--expires', expires]);
  const tokenIn = (stdout: string) => (parse(stdout.split('---\n')[0]!) as { stringData: Record<string, string> }).stringData.MLFLOW_TRACKING_PASSWORD!;
  const whoAmI = (user: string, token: string) => api().get('/api/2.0/mlflow/permissions/users/current').set('Authorization', basic(user, token));
  const grantsOf = async (user: string) =>
    (await api().get(`/api/2.0/mlflow/permissions/users/${user}/experiments`).set('Authorization', adminAuth())).body.permissions as unknown[];
  const groupNames = async () => ((await api().get('/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth())).body.groups as { name: string }[]).map((g) => g.name);

  beforeAll(async () => {
    upstream = await startStubUpstream(experimentsUpstream(experiments));
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  it("refuses another team's service account before changing anything: its token keeps working, its grants stay, nothing is created or granted", async () => {
    const a = await teamSetup(['--team', 'team-a', '--experiment', 'team-a-shared', '--service-account', 'pipelines']);
    expect(a.code, a.stderr).toBe(0);
    const tokenA = tokenIn(a.stdout);
    expect((await whoAmI('pipelines', tokenA)).status).toBe(200);
    const grantsA = await grantsOf('pipelines');
    expect(grantsA).toEqual([expect.objectContaining({ experiment_id: experiments.get('team-a-shared'), permission: 'EDIT' })]);

    const b = await teamSetup(['--team', 'team-b', '--experiment', 'team-b-shared', '--service-account', 'pipelines']);
    expect(b.code).toBe(2);
    expect(b.stderr).toContain(
      "flowgate: service account 'pipelines' exists and was not made by team-setup for team team-b (its display name is 'team-a service account', not 'team-b service account')",
    );
    expect(b.stderr).toContain('--reuse-service-account');
    expect(b.stdout).toBe('');
    // Team A's pods keep their token and the account only its grants; team B got nothing, not even its experiment or group.
    expect((await whoAmI('pipelines', tokenA)).status).toBe(200);
    expect(await grantsOf('pipelines')).toEqual(grantsA);
    expect(experiments.has('team-b-shared')).toBe(false);
    expect(await groupNames()).not.toContain('team-b');
  });

  it("takes the team's own account again on a re-run (a fresh token), and an account made otherwise only with --reuse-service-account", async () => {
    const first = await teamSetup(['--team', 'team-r', '--experiment', 'team-r-shared', '--service-account', 'team-r-bot']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).toContain('3. created service account team-r-bot');
    const again = await teamSetup(['--team', 'team-r', '--experiment', 'team-r-shared', '--service-account', 'team-r-bot']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toContain("3. service account team-r-bot exists (team team-r's)");
    expect((await whoAmI('team-r-bot', tokenIn(first.stdout))).status).toBe(401);
    expect((await whoAmI('team-r-bot', tokenIn(again.stdout))).status).toBe(200);

    // Made by `flowgate users create robot --service-account` (its display name is its username): no team's.
    const made = await api().post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'robot', is_service_account: true });
    expect(made.status).toBe(201);
    const refused = await teamSetup(['--team', 'team-c', '--experiment', 'team-c-shared', '--service-account', 'robot']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("its display name is 'robot', not 'team-c service account'");
    expect(await grantsOf('robot')).toEqual([]);
    const reused = await teamSetup(['--team', 'team-c', '--experiment', 'team-c-shared', '--service-account', 'robot', '--reuse-service-account']);
    expect(reused.code, reused.stderr).toBe(0);
    expect(reused.stderr).toContain('3. service account robot exists; reused (--reuse-service-account)');
    expect((await whoAmI('robot', tokenIn(reused.stdout))).status).toBe(200);
    expect(await grantsOf('robot')).toEqual([expect.objectContaining({ experiment_id: experiments.get('team-c-shared'), permission: 'EDIT' })]);

    // Only a flowgate service account can be reused: the projected-token variant has none.
    const k8s = await teamSetupAt(fg.url, ['--team', 'team-k', '--experiment', 'x', '--kubernetes-service-account', 'ns:sa', '--audience', 'aud', '--reuse-service-account']);
    expect(k8s.code).toBe(2);
    expect(k8s.stderr).toContain('--reuse-service-account does not go with --kubernetes-service-account');
  });
});

describe('team-setup and an --expires the token call would refuse', () => {
  let fg: TestFlowgate;
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  const experiments = new Map<string, string>();
  const api = () => request(fg.url);

  beforeAll(async () => {
    upstream = await startStubUpstream(experimentsUpstream(experiments));
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  });
  afterAll(async () => {
    await fg.close();
    await upstream.close();
    removeDir(fg.dir);
  });

  it.each([
    ['2020-01-01T00:00:00Z', 'expiration must be in the future'],
    ['next-week', 'expiration must be an ISO 8601 timestamp'],
    ['2030-13-45T00:00:00Z', "expiration '2030-13-45T00:00:00Z' is not a valid date"],
    // Past FLOWGATE_TOKEN_MAX_DAYS (366 by default), which the server tells through permissions/access-token-limits.
    [new Date(Date.now() + 400 * 86_400_000).toISOString(), 'expiration must be at most 366 days ahead'],
  ])('--expires %s is refused before step 1: nothing created, granted or made', async (expires, message) => {
    const audit = (await api().get('/api/2.0/mlflow/permissions/audit?max_results=500').set('Authorization', adminAuth())).body.entries.length as number;
    const res = await teamSetupAt(fg.url, ['--team', 'team-x', '--experiment', 'team-x-shared', '--service-account', 'team-x-bot', '--expires', expires]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(`--expires: ${message}`);
    expect(res.stderr).toContain('nothing was changed');
    expect(res.stderr).not.toMatch(/^\d\. /m);
    expect(res.stdout).toBe('');
    expect(experiments.has('team-x-shared')).toBe(false);
    expect(upstream.seen.filter((r) => r.method === 'POST')).toEqual([]);
    expect((await api().get('/api/2.0/mlflow/permissions/users/team-x-bot').set('Authorization', adminAuth())).status).toBe(404);
    const groups = (await api().get('/api/2.0/mlflow/permissions/groups').set('Authorization', adminAuth())).body.groups as { name: string }[];
    expect(groups.map((g) => g.name)).not.toContain('team-x');
    expect((await api().get('/api/2.0/mlflow/permissions/audit?max_results=500').set('Authorization', adminAuth())).body.entries).toHaveLength(audit);
  });

  it('a valid --expires still sets the whole team up', async () => {
    const expires = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const res = await teamSetupAt(fg.url, ['--team', 'team-x', '--experiment', 'team-x-shared', '--service-account', 'team-x-bot', '--expires', expires]);
    expect(res.code, res.stderr).toBe(0);
    expect(res.stderr).toContain(`4. token for team-x-bot, expires ${expires}`);
  });
});
