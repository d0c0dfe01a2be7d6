import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, parseAllDocuments } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps } from '../helpers/python-ops.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
let mlflow: MlflowServer;
let fg: FlowgateProcess;
const suffix = Date.now().toString(36);
const inDays = (d: number) => new Date(Date.now() + d * 86_400_000).toISOString();

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as a script runs it, with the admin's credentials in MLFLOW_TRACKING_* (or none). */
function cli(args: string[], env: Record<string, string> = { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token }, cwd?: string): Promise<Result> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000, ...(cwd ? { cwd } : {}) }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
async function ok(args: string[]): Promise<string> {
  const r = await cli(args);
  if (r.code !== 0) throw new Error(`flowgate ${args.join(' ')} → ${r.code}\n${r.stderr}`);
  return r.stdout;
}

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startFlowgateProcess({ env: { FLOWGATE_UPSTREAM_URL: mlflow.url } });
}, 600_000);

afterAll(async () => {
  await fg?.stop();
  await mlflow?.stop();
});

describe('flowgate users|groups|grants|tokens|audit', () => {
  it('manages users, groups, memberships and grants through the admin API, as tables or JSON', async () => {
    await ok(['users', 'create', 'alice', '--display-name', 'Alice A']);
    await ok(['users', 'create', 'robot', '--service-account']);
    const table = await ok(['users', 'list']);
    expect(table.split('\n')[0]).toMatch(/^USERNAME\s+DISPLAY_NAME\s+IS_ADMIN/);
    expect(table).toMatch(/alice\s+Alice A\s+false\s+false/);
    const sas = JSON.parse(await ok(['users', 'list', '--service-accounts', '--json'])) as { service_accounts: { username: string }[] };
    expect(sas.service_accounts.map((u) => u.username)).toEqual(['robot']);

    await ok(['groups', 'create', 'team-x']);
    await ok(['groups', 'add-member', 'team-x', 'alice']);
    expect(await ok(['groups', 'members', 'team-x'])).toMatch(/alice/);

    await ok(['grants', 'set', '--group', 'team-x', 'experiment', '0', 'READ']);
    await ok(['grants', 'set', '--group', 'team-x', 'experiment', '0', 'EDIT']); // exists: changed, not refused
    await ok(['grants', 'set', '--user', 'alice', 'model', 'some-model', 'MANAGE']);
    const grants = JSON.parse(await ok(['grants', 'list', '--group', 'team-x', '--json'])) as { permissions: unknown[] };
    expect(grants.permissions).toEqual([{ kind: 'experiment', resource: '0', permission: 'EDIT' }]);
    expect(await ok(['grants', 'on', 'experiment', '0'])).toMatch(/group\s+team-x\s+EDIT/);
    await ok(['grants', 'delete', '--user', 'alice', 'model', 'some-model']);
    expect(await ok(['grants', 'list', '--user', 'alice'])).not.toMatch(/some-model/);

    const audit = await ok(['audit', 'list', '--max', '50']);
    expect(audit).toMatch(/admin\s+\S*grant/);
  }, 120_000);

  it('sets, lists (table and JSON) and deletes a group\'s pattern grant; a pattern without a wildcard is refused', async () => {
    const group = `pat-team-${suffix}`;
    const pattern = `pat-${suffix}/*`;
    expect(await ok(['grants', 'set-pattern', '--group', group, 'experiment', pattern, 'READ'])).toContain(`group ${group}: READ on every experiment matching ${pattern}`);
    await ok(['grants', 'set-pattern', '--group', group, 'experiment', pattern, 'EDIT']); // exists: changed, not refused

    const table = await ok(['grants', 'patterns', '--kind', 'experiment']);
    expect(table.split('\n')[0]).toMatch(/^GRANTEE\s+NAME\s+KIND\s+PATTERN\s+PERMISSION$/);
    expect(table).toMatch(new RegExp(`group\\s+${group}\\s+experiment\\s+${pattern.replace('*', '\\*')}\\s+EDIT`));
    const mine = JSON.parse(await ok(['grants', 'patterns', '--group', group, '--json'])) as { patterns: unknown[] };
    expect(mine.patterns).toEqual([{ resource_type: 'experiment', pattern, group_name: group, permission: 'EDIT' }]);
    expect(JSON.parse(await ok(['grants', 'patterns', '--group', group, '--kind', 'model', '--json']))).toEqual({ patterns: [] });

    const literal = await cli(['grants', 'set-pattern', '--group', group, 'experiment', `pat-${suffix}/exact`, 'READ']);
    expect(literal.code).toBe(1);
    expect(literal.stderr).toMatch(/400 INVALID_PARAMETER_VALUE: .*has no wildcard/);
    expect((await cli(['grants', 'set-pattern', 'experiment', pattern, 'READ'])).stderr).toMatch(/--user USERNAME or --group GROUP/);
    expect((await cli(['grants', 'patterns', '--user', 'alice', '--group', group])).code).toBe(2);
    expect((await cli(['grants', 'set-pattern', '--group', group, 'run', pattern, 'READ'])).code).toBe(2);

    expect(await ok(['grants', 'delete-pattern', '--group', group, 'experiment', pattern])).toContain(`removed ${group}'s pattern grant`);
    expect(JSON.parse(await ok(['grants', 'patterns', '--group', group, '--json']))).toEqual({ patterns: [] });
    const again = await cli(['grants', 'delete-pattern', '--group', group, 'experiment', pattern]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/404 RESOURCE_DOES_NOT_EXIST: .*no pattern grant/);
    expect(await ok(['grants', 'help'])).toMatch(/grants set-pattern .*\n.*grants delete-pattern/);
  }, 60_000);

  it('takes the gateway\'s kinds by their words and USE on them only: refused before anything is sent on an experiment, model or prompt', async () => {
    const endpoint = `chat-${suffix}`;
    expect(await ok(['grants', 'set', '--user', 'alice', 'gateway-endpoint', endpoint, 'use'])).toContain(`USE on gateway-endpoint ${endpoint}`);
    await ok(['grants', 'set', '--user', 'alice', 'gateway-secret', `key-${suffix}`, 'USE']);
    await ok(['grants', 'set', '--group', 'team-x', 'model-definition', `def-${suffix}`, 'READ']);
    const listed = JSON.parse(await ok(['grants', 'list', '--user', 'alice', '--kind', 'endpoint', '--json'])) as { permissions: unknown[] };
    expect(listed.permissions).toEqual([{ kind: 'gateway_endpoint', resource: endpoint, permission: 'USE' }]);
    expect(await ok(['grants', 'on', 'gateway-endpoint', endpoint])).toMatch(/user\s+alice\s+USE/);
    expect(await ok(['grants', 'list', '--group', 'team-x'])).toMatch(new RegExp(`gateway_model_definition\\s+def-${suffix}\\s+READ`));
    await ok(['grants', 'set-pattern', '--group', 'team-x', 'gateway-endpoint', `team-x-*`, 'USE']);
    expect(JSON.parse(await ok(['grants', 'patterns', '--group', 'team-x', '--kind', 'gateway-endpoint', '--json']))).toEqual({
      patterns: [{ resource_type: 'gateway_endpoint', pattern: 'team-x-*', group_name: 'team-x', permission: 'USE' }],
    });
    await ok(['grants', 'delete-pattern', '--group', 'team-x', 'gateway-endpoint', 'team-x-*']);
    await ok(['grants', 'delete', '--user', 'alice', 'gateway-endpoint', endpoint]);

    const before = (JSON.parse(await ok(['audit', 'list', '--max', '1', '--json'])) as { entries: { id: number }[] }).entries[0]!.id;
    for (const args of [
      ['grants', 'set', '--user', 'alice', 'experiment', '0', 'USE'],
      ['grants', 'set', '--group', 'team-x', 'model', 'some-model', 'use'],
      ['grants', 'set-pattern', '--group', 'team-x', 'prompt', 'team-x-*', 'USE'],
      ['team-setup', '--team', 'team-x', '--service-account', `use-bot-${suffix}`, '--expires', inDays(2), '--experiment', `use-${suffix}`, '--permission', 'USE'],
    ]) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^flowgate: (Experiments|Registered models|Prompts) take READ, EDIT, MANAGE, NO_PERMISSIONS, not USE$/m);
    }
    expect((JSON.parse(await ok(['audit', 'list', '--max', '1', '--json'])) as { entries: { id: number }[] }).entries[0]!.id).toBe(before);
    expect(await ok(['grants', 'help'])).toMatch(/--kind experiment\|model\|prompt\|gateway-secret\|gateway-model-definition\|gateway-endpoint/);
    expect((await cli(['grants', 'set', '--user', 'alice', 'gateway', 'x', 'USE'])).stderr).toMatch(/unknown resource kind 'gateway': use experiment, model, prompt, gateway-secret, gateway-model-definition, gateway-endpoint, skill, scorer, mcp-server or workspace/);
  }, 60_000);

  it('creates and updates a person with --sign-in oidc|local, lists how each signs in, and refuses a bad value or a service account that signs in', async () => {
    const dora = `dora-${suffix}`;
    const created = JSON.parse(await ok(['users', 'create', dora, '--sign-in', 'oidc', '--json'])) as { user: Record<string, unknown> };
    expect(created.user).toMatchObject({ username: dora, sign_in: 'oidc', oidc_linked: false });
    const table = await ok(['users', 'list']);
    expect(table.split('\n')[0]).toMatch(/^USERNAME\s+DISPLAY_NAME\s+IS_ADMIN\s+IS_SERVICE_ACCOUNT\s+SIGN_IN\s+OIDC_LINKED\s+CREATED_AT$/);
    expect(table).toMatch(new RegExp(`^${dora}\\s+${dora}\\s+false\\s+false\\s+oidc\\s+false\\s`, 'm'));
    // Without OIDC configured, a person made without the flag signs in with access tokens only.
    expect(table).toMatch(/^alice\s+Alice A\s+false\s+false\s+local\s+false\s/m);

    expect(await ok(['users', 'update', dora, '--sign-in', 'local'])).toContain(`updated ${dora}`);
    expect((JSON.parse(await ok(['users', 'get', dora, '--json'])) as { user: Record<string, unknown> }).user).toMatchObject({ sign_in: 'local' });
    await ok(['users', 'update', dora, '--sign-in', 'oidc']);
    expect(await ok(['users', 'get', dora])).toMatch(new RegExp(`^${dora}\\s+${dora}\\s+false\\s+false\\s+oidc\\s+false\\s`, 'm'));
    const linked = await cli(['audit', 'list', '--max', '20', '--json']);
    expect((JSON.parse(linked.stdout) as { entries: { action: string; target: string }[] }).entries.filter((e) => e.action === 'user.sign-in' && e.target === `user:${dora}`)).toHaveLength(2);

    const bad = await cli(['users', 'create', `x-${suffix}`, '--sign-in', 'saml']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--sign-in takes oidc .* or local/);
    expect((await cli(['users', 'update', dora, '--sign-in', 'both'])).code).toBe(2);
    const sa = await cli(['users', 'create', `sa-${suffix}`, '--service-account', '--sign-in', 'oidc']);
    expect(sa.code).toBe(1);
    expect(sa.stderr).toMatch(/400 INVALID_PARAMETER_VALUE: .*service account never signs in/);
    expect(await ok(['users', 'list', '--service-accounts'])).not.toContain(`sa-${suffix}`);
    expect(await ok(['users', 'help'])).toMatch(/users create USERNAME .*--sign-in oidc\|local/);
  }, 60_000);

  it('mints a token the holder can use, and revokes it', async () => {
    await ok(['users', 'create', 'bob']);
    const minted = await cli(['tokens', 'create', 'bob', '--expires', inDays(2)]);
    expect(minted.code).toBe(0);
    const token = minted.stdout.trim();
    expect(token).toMatch(/^fgt_/);
    expect(minted.stderr).not.toContain(token);
    const asBob = { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: 'bob', MLFLOW_TRACKING_PASSWORD: token };
    const me = await cli(['users', 'get', 'bob', '--json'], asBob);
    expect(me.code).toBe(0);
    expect((JSON.parse(me.stdout) as { user: { username: string } }).user.username).toBe('bob');
    await ok(['tokens', 'revoke', 'bob']);
    expect((await cli(['users', 'get', 'bob'], asBob)).code).toBe(1);
  }, 60_000);

  it('exits 1 with MLflow\'s error message on an API error, 2 on a usage error', async () => {
    const missing = await cli(['users', 'delete', `nobody-${suffix}`]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/404 RESOURCE_DOES_NOT_EXIST: .*nobody-/);
    const dup = await cli(['groups', 'create', 'team-x']);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/409 RESOURCE_ALREADY_EXISTS/);
    const denied = await cli(['users', 'list'], { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: 'admin', MLFLOW_TRACKING_PASSWORD: 'wrong' });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toMatch(/401/);
    expect(denied.stderr).not.toContain('wrong');

    expect((await cli(['users', 'frob'])).code).toBe(2);
    expect((await cli(['grants', 'set', 'experiment', '0', 'READ'])).stderr).toMatch(/--user USERNAME or --group GROUP/);
    expect((await cli(['grants', 'set', '--user', 'alice', 'experiment', '0', 'ALL'])).code).toBe(2);
    expect((await cli(['users', 'list', '--bogus'])).code).toBe(2);
    const noUrl = await cli(['users', 'list'], {});
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toMatch(/MLFLOW_TRACKING_URI/);
  }, 60_000);
});

describe('flowgate grants (issue 38)', () => {
  const adminEnv = () => ({ MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token });

  it('names an experiment by its name as well as its id; a name MLflow does not have is said plainly', async () => {
    await ok(['users', 'create', `nina-${suffix}`]);
    const name = `named-exp-${suffix}`;
    const made = await fetch(`${fg.url}/api/2.0/mlflow/experiments/create`, {
      method: 'POST',
      headers: { Authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.token}`).toString('base64')}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ name }),
    });
    const id = ((await made.json()) as { experiment_id: string }).experiment_id;
    expect(await ok(['grants', 'set', '--user', `nina-${suffix}`, 'experiment', name, 'READ'])).toBe(`user nina-${suffix}: READ on experiment ${name} (id ${id})\n`);
    expect(JSON.parse(await ok(['grants', 'list', '--user', `nina-${suffix}`, '--json']))).toEqual({ permissions: [{ kind: 'experiment', resource: id, permission: 'READ' }] });
    expect(await ok(['grants', 'on', 'experiment', name])).toMatch(new RegExp(`user\\s+nina-${suffix}\\s+READ`));
    await ok(['grants', 'delete', '--user', `nina-${suffix}`, 'experiment', name]);
    expect(JSON.parse(await ok(['grants', 'list', '--user', `nina-${suffix}`, '--json']))).toEqual({ permissions: [] });

    const missing = await cli(['grants', 'set', '--user', `nina-${suffix}`, 'experiment', `no-such-${suffix}`, 'READ']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe(`flowgate: 404 RESOURCE_DOES_NOT_EXIST: MLflow has no experiment named 'no-such-${suffix}' (give its name exactly, or its numeric id)\n`);
  }, 60_000);

  it('says when a grant made its group: a misspelt group name is not silent', async () => {
    await ok(['groups', 'create', `crew-${suffix}`]);
    expect(await ok(['grants', 'set', '--group', `crew-${suffix}`, 'experiment', '0', 'READ'])).toBe(`group crew-${suffix}: READ on experiment 0\n`);
    expect(await ok(['grants', 'set', '--group', `crwe-${suffix}`, 'experiment', '0', 'READ'])).toBe(
      `group crwe-${suffix}: READ on experiment 0 (new group 'crwe-${suffix}': no group had this name, so it was created; check the spelling)\n`,
    );
    expect(JSON.parse(await ok(['grants', 'set', '--group', `crwe2-${suffix}`, 'model', 'm', 'READ', '--json']))).toMatchObject({ new_group: true });
  }, 60_000);

  it('grants prune asks the running flowgate (no store of its own in the working directory), dry run first', async () => {
    const gone = `gone-model-${suffix}`;
    await ok(['users', 'create', `pru-${suffix}`]);
    await ok(['grants', 'set', '--user', `pru-${suffix}`, 'model', gone, 'READ']);
    const here = mkdtempSync(join(tmpdir(), 'fg-prune-'));
    try {
      const dry = await cli(['grants', 'prune', '--dry-run'], adminEnv(), here);
      expect(dry.stderr).toBe('');
      expect(dry.stdout).toContain(`would prune\tregistered_model:${gone}\n`);
      expect(await ok(['grants', 'list', '--user', `pru-${suffix}`])).toContain(gone);
      const done = await cli(['grants', 'prune', '--json'], adminEnv(), here);
      expect(done.code, done.stderr).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ orphans: expect.arrayContaining([`registered_model:${gone}`]), unknown: [], dry_run: false });
      expect(await ok(['grants', 'list', '--user', `pru-${suffix}`])).not.toContain(gone);
      expect(readdirSync(here)).toEqual([]);
      const audit = await ok(['audit', 'list', '--max', '20']);
      expect(audit).toContain('grant.prune-orphan');
      // Without credentials it asks for them, as every verb does, instead of opening a store here.
      const noUrl = await cli(['grants', 'prune'], {}, here);
      expect(noUrl.code).toBe(2);
      expect(noUrl.stderr).toMatch(/MLFLOW_TRACKING_URI/);
      expect(readdirSync(here)).toEqual([]);
    } finally {
      rmSync(here, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('flowgate explain', () => {
  it('names the deciding grant for an allowed and a denied call against the real MLflow', async () => {
    await ok(['users', 'create', `erin-${suffix}`]);
    const created = await fetch(`${fg.url}/api/2.0/mlflow/experiments/create`, {
      method: 'POST',
      headers: { authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.token}`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `explained-${suffix}` }),
    });
    const { experiment_id: id } = (await created.json()) as { experiment_id: string };
    const path = `/api/2.0/mlflow/experiments/get?experiment_id=${id}`;
    const denied = await cli(['explain', 'GET', path, '--user', `erin-${suffix}`]);
    expect(denied.code).toBe(0);
    expect(denied.stdout).toContain(`DENY erin-${suffix} GET`);
    expect(denied.stdout).toContain(`experiment ${id}: direct none; groups none; effective NO_PERMISSIONS (default-permission)`);
    await ok(['grants', 'set', '--user', `erin-${suffix}`, 'experiment', id, 'READ']);
    const allowed = JSON.parse(await ok(['explain', 'GET', path, '--user', `erin-${suffix}`, '--json'])) as {
      verdict: { allow: boolean; reason: string };
      resources: Array<{ direct: string }>;
    };
    expect(allowed.verdict).toMatchObject({ allow: true, reason: 'direct-grant' });
    expect(allowed.resources[0]!.direct).toBe('READ');
    expect((await cli(['explain', 'GET', 'no-slash'])).code).toBe(2);
  }, 60_000);
});

describe('flowgate team-setup', () => {
  it('does steps 1–4, and the service account logs a run with the printed Secret', async () => {
    const name = `team-a-shared-${suffix}`;
    const r = await cli([
      'team-setup', '--team', 'team-a', '--experiment', name, '--service-account', 'team-a-pipelines',
      '--permission', 'EDIT', '--expires', inDays(30), '--namespace', 'ns-a', '--label', 'mlflow-team-a-access',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const [secret, podDefault] = parseAllDocuments(r.stdout).map((d) => d.toJSON() as Record<string, any>);
    expect(secret).toMatchObject({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'mlflow-team-a', namespace: 'ns-a' } });
    expect(secret!.stringData.MLFLOW_TRACKING_URI).toBe(`${fg.url}/`);
    expect(secret!.stringData.MLFLOW_TRACKING_USERNAME).toBe('team-a-pipelines');
    const token = secret!.stringData.MLFLOW_TRACKING_PASSWORD as string;
    expect(token).toMatch(/^fgt_/);
    expect(r.stderr).not.toContain(token);
    expect(podDefault).toEqual({
      apiVersion: 'kubeflow.org/v1alpha1',
      kind: 'PodDefault',
      metadata: { name: 'mlflow-team-a', namespace: 'ns-a' },
      spec: {
        desc: 'MLflow access as team-a-pipelines',
        selector: { matchLabels: { 'mlflow-team-a-access': 'true' } },
        envFrom: [{ secretRef: { name: 'mlflow-team-a' } }],
      },
    });

    // The group was created by its grant and holds EDIT; so does the service account, directly.
    const id = (JSON.parse(await ok(['grants', 'list', '--group', 'team-a', '--json'])) as { permissions: { resource: string; permission: string }[] }).permissions;
    expect(id).toHaveLength(1);
    expect(id[0]!.permission).toBe('EDIT');
    expect(await ok(['grants', 'on', 'experiment', id[0]!.resource])).toMatch(/user\s+team-a-pipelines\s+EDIT/);

    const other = await runOps(mlflow.venv, fg.url, ADMIN.username, ADMIN.token, [['other', 'create_experiment', `other-${suffix}`]]);
    const env = secret!.stringData as Record<string, string>;
    const created = await runOps(mlflow.venv, env.MLFLOW_TRACKING_URI!, env.MLFLOW_TRACKING_USERNAME!, token, [
      ['run', 'create_run', id[0]!.resource],
      ['other', 'get_experiment', (other.other as { value: string }).value],
    ]);
    expect(created.run?.ok, JSON.stringify(created)).toBe(true);
    expect(created.other).toEqual({ ok: false, error: 'PERMISSION_DENIED' });
    const logged = await runOps(mlflow.venv, env.MLFLOW_TRACKING_URI!, env.MLFLOW_TRACKING_USERNAME!, token, [
      ['metric', 'log_metric', (created.run as { value: string }).value],
    ]);
    expect(logged.metric).toEqual({ ok: true, value: true });

    // Run again for the same experiment: nothing is duplicated, and a fresh token replaces the old one.
    const again = await cli(['team-setup', '--team', 'team-a', '--experiment', name, '--service-account', 'team-a-pipelines', '--expires', inDays(30)]);
    expect(again.code, again.stderr).toBe(0);
    const second = parse(again.stdout.split('---\n')[0]!) as { stringData: Record<string, string> };
    expect(second.stringData.MLFLOW_TRACKING_PASSWORD).not.toBe(token);
    const stale = await runOps(mlflow.venv, fg.url, 'team-a-pipelines', token, [['get', 'get_experiment', id[0]!.resource]]);
    expect(stale.get).toEqual({ ok: false, error: 'UNAUTHENTICATED' });
  }, 300_000);

  it('refuses to make a person into the team\'s service account', async () => {
    await ok(['users', 'create', 'carol']);
    const r = await cli(['team-setup', '--team', 'team-c', '--experiment', '0', '--service-account', 'carol', '--expires', inDays(1)]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/carol.*not a service account/);
    expect((await cli(['team-setup', '--team', 'team-c', '--service-account', 'x'])).code).toBe(2);
  }, 60_000);
});
