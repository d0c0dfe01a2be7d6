import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyDocument, policyJsonSchema } from '../../src/commands/policy-document.js';
import { ADMIN } from '../helpers/flowgate.js';
import { startFlowgateProcess, type FlowgateProcess } from '../helpers/flowgate-process.js';
import { startMlflowServer, type MlflowServer } from '../helpers/mlflow-server.js';
import { runOps, type Op } from '../helpers/python-ops.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'flowgate-policy-'));
let mlflow: MlflowServer;
let fg: FlowgateProcess;
const tokens: Record<string, string> = {};
const exp: Record<string, string> = {};

/** The CLI with the bootstrap admin's credentials, or another administrator's. */
function cli(args: string[], as: { username: string; token: string } = ADMIN): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { PATH: process.env.PATH ?? '', MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: as.username, MLFLOW_TRACKING_PASSWORD: as.token };
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { env, timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
async function ok(args: string[]): Promise<string> {
  const r = await cli(args);
  if (r.code !== 0) throw new Error(`flowgate ${args.join(' ')} → ${r.code}\n${r.stderr}`);
  return r.stdout;
}
/** The admin API directly, for what the CLI has no command for (pattern grants). */
async function adminApi(method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${fg.url}/api/2.0/mlflow/${path}`, {
    method,
    headers: { authorization: `Basic ${Buffer.from(`${ADMIN.username}:${ADMIN.token}`).toString('base64')}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (res.status >= 300) throw new Error(`${method} ${path} → ${res.status} ${await res.text()}`);
  return res.json();
}
const auditCount = async () => (JSON.parse(await ok(['audit', 'list', '--max', '1000', '--json'])) as { entries: unknown[] }).entries.length;

/** What each persona may do on each experiment, through the real Python client. */
async function decisions(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const user of ['reader', 'editor', 'robot']) {
    const ops: Op[] = Object.entries(exp).flatMap(([name, id]): Op[] => [[`${name} read`, 'get_experiment', id], [`${name} write`, 'create_run', id]]);
    const res = await runOps(mlflow.venv, fg.url, user, tokens[user]!, ops);
    for (const [label, o] of Object.entries(res)) out[`${user} ${label}`] = o.ok ? 'ok' : o.error;
  }
  return out;
}

beforeAll(async () => {
  mlflow = await startMlflowServer();
  fg = await startFlowgateProcess({ env: { FLOWGATE_UPSTREAM_URL: mlflow.url } });
  const made = await runOps(mlflow.venv, fg.url, ADMIN.username, ADMIN.token, [
    ['alpha', 'create_experiment', 'alpha'],
    ['beta', 'create_experiment', 'beta'],
  ]);
  exp.alpha = (made.alpha as { value: string }).value;
  exp.beta = (made.beta as { value: string }).value;
  await ok(['users', 'create', 'reader', '--display-name', 'Rita Reader']);
  await ok(['users', 'create', 'editor']);
  await ok(['users', 'create', 'robot', '--service-account']);
  for (const u of ['reader', 'editor', 'robot']) tokens[u] = (await ok(['tokens', 'create', u])).trim();
  await ok(['groups', 'create', 'editors']);
  await ok(['groups', 'add-member', 'editors', 'editor']);
  await ok(['grants', 'set', '--group', 'editors', 'experiment', exp.alpha, 'EDIT']);
  await ok(['grants', 'set', '--user', 'reader', 'experiment', exp.alpha, 'READ']);
  await ok(['grants', 'set', '--user', 'reader', 'experiment', exp.beta, 'NO_PERMISSIONS']);
  await ok(['grants', 'set', '--user', 'robot', 'experiment', exp.beta, 'MANAGE']);
  await ok(['grants', 'set', '--group', 'editors', 'model', 'shared-model', 'READ']);
  await adminApi('POST', 'permissions/users/robot/patterns', { resource_type: 'experiment', pattern: 'alph?', permission: 'READ' });
  // The gateway's kinds, by name (MLflow need not have them yet), with USE, which only they take.
  await ok(['grants', 'set', '--user', 'robot', 'gateway-endpoint', 'team-chat', 'USE']);
  await ok(['grants', 'set', '--user', 'robot', 'gateway-model-definition', 'team-def', 'READ']);
  await adminApi('POST', 'permissions/users/robot/patterns', { resource_type: 'gateway_secret', pattern: 'team-*', permission: 'USE' });
}, 600_000);

afterAll(async () => {
  await fg?.stop();
  await mlflow?.stop();
});

describe('flowgate policy', () => {
  it('exports principals and grants by name, never a token, in a file the schema accepts', async () => {
    const yaml = await ok(['policy', 'export']);
    for (const t of Object.values(tokens)) expect(yaml).not.toContain(t);
    expect(yaml).not.toMatch(/fgt_/);
    const doc = policyDocument.parse(parse(yaml));
    expect(doc.users.map((u) => u.username)).toEqual(['admin', 'editor', 'reader']);
    expect(doc.users.find((u) => u.username === 'reader')?.display_name).toBe('Rita Reader');
    expect(doc.service_accounts.map((u) => u.username)).toEqual(['robot']);
    expect(doc.groups).toEqual([{ name: 'editors', members: ['editor'] }]);
    expect(doc.grants).toEqual(
      expect.arrayContaining([
        { experiment: 'alpha', group: 'editors', permission: 'EDIT' },
        { experiment: 'alpha', user: 'reader', permission: 'READ' },
        { experiment: 'beta', user: 'reader', permission: 'NO_PERMISSIONS' },
        { experiment: 'beta', user: 'robot', permission: 'MANAGE' },
        { registered_model: 'shared-model', group: 'editors', permission: 'READ' },
        { gateway_endpoint: 'team-chat', user: 'robot', permission: 'USE' },
        { gateway_model_definition: 'team-def', user: 'robot', permission: 'READ' },
      ]),
    );
    expect(doc.patterns).toEqual([
      { resource_type: 'experiment', pattern: 'alph?', user: 'robot', permission: 'READ' },
      { resource_type: 'gateway_secret', pattern: 'team-*', user: 'robot', permission: 'USE' },
    ]);
    const schema = JSON.parse(readFileSync(fileURLToPath(new URL('../../schemas/policy.schema.json', import.meta.url)), 'utf8')) as { properties: Record<string, unknown> };
    expect(Object.keys(schema.properties).sort()).toEqual(['grants', 'groups', 'patterns', 'service_accounts', 'users', 'version']);
    // The committed schema is the one the CLI validates with.
    expect(schema).toEqual(JSON.parse(JSON.stringify(policyJsonSchema())));
  }, 120_000);

  it('export → wipe grants → apply gives back the same decisions; a second apply changes nothing', async () => {
    const before = await decisions();
    expect(before['reader alpha read']).toBe('ok');
    expect(before['reader beta read']).toBe('PERMISSION_DENIED');
    expect(before['editor alpha write']).toBe('ok');
    expect(before['robot beta write']).toBe('ok');
    expect(before['robot alpha read']).toBe('ok');
    const file = join(dir, 'policy.yaml');
    writeFileSync(file, await ok(['policy', 'export']));

    const doc = parse(readFileSync(file, 'utf8')) as { grants: Record<string, string>[]; patterns: Record<string, string>[] };
    for (const p of doc.patterns)
      await adminApi('DELETE', `permissions/users/${p.user}/patterns?${new URLSearchParams({ resource_type: p.resource_type!, pattern: p.pattern! })}`);
    for (const g of doc.grants) {
      const who = g.user !== undefined ? ['--user', g.user] : ['--group', g.group!];
      const [field, name] = Object.entries(g).find(([k]) => k !== 'user' && k !== 'group' && k !== 'permission')!;
      // The policy field is the kind's name; its CLI word is the same with '-' (experiments by id).
      await ok(['grants', 'delete', ...who, field.replace(/_/g, '-'), field === 'experiment' ? exp[name]! : name]);
    }
    await ok(['groups', 'remove-member', 'editors', 'editor']);
    const wiped = await decisions();
    expect(wiped['reader alpha read']).toBe('PERMISSION_DENIED');
    expect(wiped['editor alpha write']).toBe('PERMISSION_DENIED');
    expect(wiped['robot alpha read']).toBe('PERMISSION_DENIED');

    const dry = await cli(['policy', 'apply', file, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/^\+ member editor of editors$/m);
    expect(dry.stdout).toMatch(/^\+ grant experiment:alpha user:reader READ$/m);
    expect(dry.stdout).toMatch(/^\+ grant gateway_endpoint:team-chat user:robot USE$/m);
    expect(dry.stdout).toMatch(/^\+ pattern gateway_secret:team-\* user:robot USE$/m);
    expect(await decisions()).toEqual(wiped);

    const applied = await cli(['policy', 'apply', file]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout.trim().split('\n')).toHaveLength(doc.grants.length + doc.patterns.length + 1);
    expect(await decisions()).toEqual(before);
    expect(await ok(['policy', 'export'])).toBe(readFileSync(file, 'utf8'));

    const audits = await auditCount();
    const twice = await cli(['policy', 'apply', file]);
    expect(twice.code).toBe(0);
    expect(twice.stdout).toBe('');
    expect(twice.stderr).toMatch(/no changes/);
    expect(await auditCount()).toBe(audits);
  }, 300_000);

  it('--prune removes what the file lacks, and --dry-run shows it without doing it', async () => {
    const doc = policyDocument.parse(parse(await ok(['policy', 'export'])));
    const smaller = {
      ...doc,
      users: doc.users.filter((u) => u.username !== 'editor'),
      groups: [],
      grants: doc.grants.filter((g) => g.user !== 'reader'),
    };
    const file = join(dir, 'smaller.yaml');
    writeFileSync(file, stringify(smaller));
    const dry = await ok(['policy', 'apply', file, '--prune', '--dry-run']);
    expect(dry).toMatch(/^- grant experiment:alpha user:reader READ$/m);
    expect(dry).toMatch(/^- member editor of editors$/m);
    expect(dry).not.toMatch(/^- group editors$/m);
    expect(dry).toMatch(/^- user editor$/m);
    expect(dry).not.toMatch(/user admin/);
    expect(policyDocument.parse(parse(await ok(['policy', 'export'])))).toEqual(doc);

    await ok(['policy', 'apply', file, '--prune']);
    const after = policyDocument.parse(parse(await ok(['policy', 'export'])));
    expect(after.users.map((u) => u.username)).toEqual(['admin', 'reader']);
    // The file still grants to the group: it stays (without members), with its grants.
    expect(after.groups).toEqual([{ name: 'editors', members: [] }]);
    expect(after.grants.filter((g) => g.group === 'editors')).toHaveLength(2);
    expect(after.grants.filter((g) => g.user === 'reader')).toEqual([]);
    expect((await cli(['policy', 'apply', file, '--prune'])).stdout).toBe('');
  }, 300_000);

  it('refuses a file that is not a policy, or names an unknown experiment, before changing anything', async () => {
    const useless = join(dir, 'use-on-experiment.yaml');
    writeFileSync(
      useless,
      stringify({
        version: 1,
        users: [{ username: 'newbie' }],
        grants: [{ experiment: 'alpha', user: 'newbie', permission: 'USE' }],
        patterns: [{ resource_type: 'prompt', pattern: 'team-*', user: 'newbie', permission: 'USE' }],
      }),
    );
    const refused = await cli(['policy', 'apply', useless]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/grants\.0\.permission: Experiments take READ, EDIT, MANAGE, NO_PERMISSIONS, not USE/);
    expect(refused.stderr).toMatch(/patterns\.0\.permission: Prompts take READ, EDIT, MANAGE, NO_PERMISSIONS, not USE/);
    expect(await ok(['users', 'list'])).not.toMatch(/newbie/);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, stringify({ version: 1, grants: [{ experiment: 'alpha', user: 'reader', group: 'x', permission: 'READ' }] }));
    const r = await cli(['policy', 'apply', bad]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/grants\.0: name exactly one of user, group/);
    const unknown = join(dir, 'unknown.yaml');
    writeFileSync(unknown, stringify({ version: 1, users: [{ username: 'newbie' }], grants: [{ experiment: 'nope', user: 'newbie', permission: 'READ' }] }));
    const u = await cli(['policy', 'apply', unknown]);
    expect(u.code).toBe(2);
    expect(u.stderr).toMatch(/no experiment named 'nope'/);
    expect(await ok(['users', 'list'])).not.toMatch(/newbie/);
  }, 60_000);

  it('carries how each person signs in, both ways; a new person without it gets flowgate\'s default', async () => {
    const doc = policyDocument.parse(parse(await ok(['policy', 'export'])));
    expect(doc.users.map((u) => [u.username, u.sign_in])).toEqual([['admin', 'local'], ['reader', 'local']]);
    const file = join(dir, 'sign-in.yaml');
    writeFileSync(
      file,
      stringify({
        ...doc,
        users: [
          ...doc.users.map((u) => (u.username === 'reader' ? { ...u, sign_in: 'oidc' } : u)),
          { username: 'nina', sign_in: 'oidc' },
          { username: 'noel' },
        ],
      }),
    );
    const dry = await ok(['policy', 'apply', file, '--dry-run']);
    expect(dry).toMatch(/^~ user reader \{"sign_in":"oidc"\}$/m);
    expect(dry).toMatch(/^\+ user nina \(sign-in oidc\)$/m);
    expect(dry).toMatch(/^\+ user noel$/m);
    await ok(['policy', 'apply', file]);
    const users = (await adminApi('GET', 'permissions/users')).users as Array<Record<string, unknown>>;
    const byName = Object.fromEntries(users.map((u) => [u.username, u]));
    expect(byName.reader).toMatchObject({ sign_in: 'oidc', oidc_linked: false });
    expect(byName.nina).toMatchObject({ sign_in: 'oidc' });
    // No OIDC configured here: flowgate's default for a person is access tokens only.
    expect(byName.noel).toMatchObject({ sign_in: 'local' });
    const again = policyDocument.parse(parse(await ok(['policy', 'export'])));
    expect(again.users.map((u) => [u.username, u.sign_in])).toEqual([['admin', 'local'], ['nina', 'oidc'], ['noel', 'local'], ['reader', 'oidc']]);
    expect((await cli(['policy', 'apply', file])).stdout).toBe('');
  }, 120_000);

  it('another administrator\'s --prune with a file that leaves out the bootstrap admin, or demotes or relinks it, applies the rest and keeps the bootstrap admin', async () => {
    await ok(['users', 'create', 'root', '--admin']);
    const root = { username: 'root', token: (await ok(['tokens', 'create', 'root'])).trim() };
    const users = (await adminApi('GET', 'permissions/users')).users as Array<Record<string, unknown>>;
    // The admin-only listing marks the bootstrap admin, and only it.
    expect(users.filter((u) => 'bootstrap' in u)).toEqual([expect.objectContaining({ username: 'admin', bootstrap: true })]);

    const doc = policyDocument.parse(parse(await ok(['policy', 'export'])));
    const withoutAdmin = join(dir, 'without-admin.yaml');
    // Not named anywhere in the file (the bootstrap admin's creator grants on alpha and beta left out too).
    writeFileSync(
      withoutAdmin,
      stringify({ ...doc, users: doc.users.filter((u) => u.username !== 'admin' && u.username !== 'noel'), grants: doc.grants.filter((g) => g.user !== 'admin') }),
    );
    const pruned = await cli(['policy', 'apply', withoutAdmin, '--prune'], root);
    expect(pruned.code, pruned.stderr).toBe(0);
    expect(pruned.stdout).toMatch(/^- user noel$/m);
    expect(pruned.stdout).not.toMatch(/user admin/);
    expect(pruned.stderr).toMatch(/^flowgate: kept user admin: not removed: the bootstrap admin is owned by configuration/m);

    const demoting = join(dir, 'demoting.yaml');
    const current = policyDocument.parse(parse(await ok(['policy', 'export'])));
    writeFileSync(
      demoting,
      stringify({
        ...current,
        users: current.users.map((u) =>
          u.username === 'admin' ? { ...u, is_admin: false, sign_in: 'oidc', display_name: 'The operator' } : u.username === 'nina' ? { ...u, display_name: 'Nina N' } : u,
        ),
      }),
    );
    const json = await cli(['policy', 'apply', demoting, '--prune', '--json'], root);
    expect(json.code, json.stderr).toBe(0);
    const plan = JSON.parse(json.stdout) as { changes: string[]; kept: string[] };
    expect(plan.changes.sort()).toEqual(['~ user admin {"display_name":"The operator"}', '~ user nina {"display_name":"Nina N"}']);
    expect(plan.kept).toEqual([
      expect.stringMatching(/^user admin: is_admin stays true, not false: the bootstrap admin/),
      expect.stringMatching(/^user admin: sign_in stays "local", not "oidc": the bootstrap admin/),
    ]);
    const after = Object.fromEntries(((await adminApi('GET', 'permissions/users')).users as Array<Record<string, unknown>>).map((u) => [u.username, u]));
    expect(after.admin).toMatchObject({ is_admin: true, sign_in: 'local', display_name: 'The operator', bootstrap: true });
    expect(after.nina).toMatchObject({ display_name: 'Nina N' });
    expect(after.noel).toBeUndefined();
  }, 120_000);
});
