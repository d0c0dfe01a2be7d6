import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Io } from '../../src/commands/admin-cli/output.js';
import { runAdminCli } from '../../src/commands/admin-cli/run.js';
import { runTeamSetup } from '../../src/commands/team-setup.js';
import { ADMIN, adminAuth, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * An experiment argument made of digits (`grants set|delete … experiment 2024`, `team-setup --experiment 2024`)
 * may be an id or a name: MLflow lets an experiment be named "2024". Read as an id only, it granted on
 * whichever experiment has that id. Both are looked up now; two different experiments are refused.
 */

// MLflow's experiments here, name → id: '2024' is a name while id 2024 is someone else's experiment;
// '2025' is only a name (MLflow has no id 2025); id 7 has no experiment named '7'.
const EXPERIMENTS = new Map([
  ['2024', '31'],
  ['finance-forecast', '2024'],
  ['2025', '32'],
  ['seven', '7'],
]);

function mlflow(r: SeenRequest) {
  const url = new URL(r.url, 'http://mlflow');
  const found = url.pathname.endsWith('/experiments/get-by-name')
    ? [...EXPERIMENTS].find(([name]) => name === url.searchParams.get('experiment_name'))
    : url.pathname.endsWith('/experiments/get')
      ? [...EXPERIMENTS].find(([, id]) => id === url.searchParams.get('experiment_id'))
      : undefined;
  if (found) return { status: 200, body: { experiment: { experiment_id: found[1], name: found[0], lifecycle_stage: 'active' } } };
  if (url.pathname.includes('/experiments/get')) return { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'No such experiment' } };
  return { status: 200, body: {} };
}

let fg: TestFlowgate;
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;

beforeAll(async () => {
  upstream = await startStubUpstream(mlflow);
  fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url });
  await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'dana' });
});
afterAll(async () => {
  await fg.close();
  await upstream.close();
  removeDir(fg.dir);
});

/** One CLI command in this process, as the admin. */
async function flowgate(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    env: { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token },
    out: (t) => void (stdout += t),
    err: (t) => void (stderr += t),
    readFile: () => Promise.reject(new Error('no files here')),
  };
  const code = args[0] === 'team-setup' ? await runTeamSetup(args.slice(1), io) : await runAdminCli(args[0]!, args.slice(1), io);
  return { code, stdout, stderr };
}

const grantsOn = async (id: string) => {
  const users = await request(fg.url).get(`/api/2.0/mlflow/permissions/experiments/${id}/users`).set('Authorization', adminAuth());
  const groups = await request(fg.url).get(`/api/2.0/mlflow/permissions/experiments/${id}/groups`).set('Authorization', adminAuth());
  return [...(users.body.users as Array<{ username: string }>).map((u) => u.username), ...(groups.body.groups as Array<{ group_name: string }>).map((g) => g.group_name)];
};

const AMBIGUOUS =
  "flowgate: '2024' names two experiments: id 2024 (named 'finance-forecast') and the one named '2024' (id 31); nothing was changed. " +
  "Give 31 for the experiment named '2024', or the name 'finance-forecast' for id 2024\n";

describe('grants set|delete experiment DIGITS', () => {
  it('refuses digits that are one experiment\'s id and another\'s name, granting on neither', async () => {
    const r = await flowgate(['grants', 'set', '--user', 'dana', 'experiment', '2024', 'EDIT']);
    expect(r.code).toBe(2);
    expect(r.stderr.split('usage:')[0]).toBe(AMBIGUOUS);
    expect(r.stdout).toBe('');
    expect(await grantsOn('2024')).toEqual([]);
    expect(await grantsOn('31')).toEqual([]);
    // Each is still reachable without doubt: the named one by its id, the other by its name.
    expect((await flowgate(['grants', 'set', '--user', 'dana', 'experiment', '31', 'READ'])).stdout).toBe('user dana: READ on experiment 31\n');
    expect((await flowgate(['grants', 'set', '--user', 'dana', 'experiment', 'finance-forecast', 'READ'])).stdout).toBe(
      'user dana: READ on experiment finance-forecast (id 2024)\n',
    );
    const del = await flowgate(['grants', 'delete', '--user', 'dana', 'experiment', '2024']);
    expect(del.code).toBe(2);
    expect(await grantsOn('2024')).toEqual(['dana']);
    await flowgate(['grants', 'delete', '--user', 'dana', 'experiment', '31']);
    await flowgate(['grants', 'delete', '--user', 'dana', 'experiment', 'finance-forecast']);
  });

  it('uses the one experiment digits name: the one named so when no experiment has that id, the id when none is named so', async () => {
    const named = await flowgate(['grants', 'set', '--user', 'dana', 'experiment', '2025', 'EDIT']);
    expect(named.code, named.stderr).toBe(0);
    expect(named.stdout).toBe('user dana: EDIT on experiment 2025 (id 32)\n');
    expect(await grantsOn('32')).toEqual(['dana']);
    expect(await grantsOn('2025')).toEqual([]);
    expect((await flowgate(['grants', 'delete', '--user', 'dana', 'experiment', '2025'])).stdout).toBe("removed dana's grant on experiment 2025 (id 32)\n");
    expect(await grantsOn('32')).toEqual([]);

    expect((await flowgate(['grants', 'set', '--user', 'dana', 'experiment', '7', 'READ'])).stdout).toBe('user dana: READ on experiment 7\n');
    expect(await grantsOn('7')).toEqual(['dana']);
    // Digits MLflow has neither as an id nor as a name stay an id: a grant left on a deleted experiment can still go.
    expect((await flowgate(['grants', 'set', '--user', 'dana', 'experiment', '999', 'READ'])).code).toBe(0);
    expect((await flowgate(['grants', 'delete', '--user', 'dana', 'experiment', '999'])).stdout).toBe("removed dana's grant on experiment 999\n");
  });
});

describe('team-setup --experiment DIGITS', () => {
  const expires = new Date(Date.now() + 30 * 86_400_000).toISOString();

  it('refuses digits that are one experiment\'s id and another\'s name before anything is created or granted', async () => {
    const r = await flowgate(['team-setup', '--team', 'team-d', '--experiment', 'new-one', '--experiment', '2024', '--service-account', 'team-d-bot', '--expires', expires]);
    expect(r.code).toBe(2);
    expect(r.stderr.split('usage:')[0]).toBe(AMBIGUOUS);
    expect(r.stdout).toBe('');
    expect(await grantsOn('2024')).toEqual([]);
    expect(await grantsOn('31')).toEqual([]);
    expect(upstream.seen.filter((s) => s.url.includes('experiments/create'))).toEqual([]);
    expect((await request(fg.url).get('/api/2.0/mlflow/permissions/users/team-d-bot').set('Authorization', adminAuth())).status).toBe(404);
  });

  it('grants on the experiment named by digits when no experiment has that id (the secret-free variant too)', async () => {
    const r = await flowgate(['team-setup', '--team', 'team-e', '--experiment', '2025', '--service-account', 'team-e-bot', '--expires', expires]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain('2. group team-e: EDIT on experiment 32');
    expect((await grantsOn('32')).sort()).toEqual(['team-e', 'team-e-bot']);
    expect(await grantsOn('2025')).toEqual([]);

    const k8s = await flowgate(['team-setup', '--team', 'team-k', '--experiment', '2025', '--kubernetes-service-account', 'ns-k:runner', '--audience', 'aud']);
    expect(k8s.code, k8s.stderr).toBe(0);
    expect((await grantsOn('32')).sort()).toEqual(['k8s:ns-k', 'team-e', 'team-e-bot', 'team-k']);
    const k8sAmbiguous = await flowgate(['team-setup', '--team', 'team-k', '--experiment', '2024', '--kubernetes-service-account', 'ns-k:runner', '--audience', 'aud']);
    expect(k8sAmbiguous.code).toBe(2);
    expect(await grantsOn('2024')).toEqual([]);

    const none = await flowgate(['team-setup', '--team', 'team-e', '--experiment', '999', '--service-account', 'team-e-bot', '--expires', expires]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("MLflow has no experiment with id 999 nor one named '999'");
  });
});
