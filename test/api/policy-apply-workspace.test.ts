import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { parse, stringify } from 'yaml';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { runPolicy } from '../../src/commands/policy.js';
import { policyDocument, type PolicyDocument } from '../../src/commands/policy-document.js';
import { ADMIN, adminAuth, removeDir, startStubUpstream, startTestFlowgate, type SeenRequest, type TestFlowgate } from '../helpers/flowgate.js';

/**
 * A policy file's grant or pattern grant without `in_workspace` is the default workspace's
 * (docs/security-model.md: "`in_workspace:` on each grant kept outside `default`"; `policy export`
 * tags every other). `policy apply` with MLFLOW_WORKSPACE (or `--workspace`) naming another workspace
 * made such grants there, with experiments named in it: a user holding MANAGE on the default
 * workspace's `team-x` got MANAGE on ws-a's, a different experiment, and the diff line did not say.
 */
afterEach(() => vi.unstubAllGlobals());

const io = (file: string, env: Record<string, string>) => {
  const seen = { out: '', err: '' };
  return {
    seen,
    io: {
      out: (t: string) => void (seen.out += t),
      err: (t: string) => void (seen.err += t),
      readFile: async () => file,
      env,
    },
  };
};

it("the reviewer's case: an untagged grant goes out in the batch for the default workspace, with MLFLOW_WORKSPACE=ws-a", async () => {
  const sent: Array<{ url: string; workspace: string | null; body: unknown }> = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    sent.push({ url, workspace: headers.get('X-MLFLOW-WORKSPACE'), body: init.body === undefined ? undefined : JSON.parse(String(init.body)) });
    const path = new URL(url).pathname;
    const json = (v: unknown) => new Response(JSON.stringify(v), { status: 200, headers: { 'Content-Type': 'application/json' } });
    if (path.endsWith('/permissions/users'))
      return json({
        users: [
          { username: 'admin', display_name: 'admin', is_admin: true, is_service_account: false, sign_in: 'local', bootstrap: true },
          { username: 'alice', display_name: 'alice', is_admin: false, is_service_account: false, sign_in: 'local' },
        ],
      });
    if (path.endsWith('/permissions/groups')) return json({ groups: [] });
    if (path.endsWith('/permissions/patterns')) return json({ patterns: [] });
    if (path.endsWith('/permissions/batch')) return json({ results: [] });
    return json({ permissions: [] });
  });
  const file = 'version: 1\nusers:\n  - username: alice\ngrants:\n  - registered_model: team-x\n    user: alice\n    permission: MANAGE\n';
  const { io: given, seen } = io(file, { MLFLOW_TRACKING_URI: 'https://flowgate.example', MLFLOW_TRACKING_USERNAME: 'admin', MLFLOW_TRACKING_PASSWORD: 'x', MLFLOW_WORKSPACE: 'ws-a' });
  expect(await runPolicy(['apply', '-'], given as never), seen.err).toBe(0);
  expect(seen.out).toBe('+ grant registered_model:team-x user:alice MANAGE\n');
  // The default workspace's grants were read in it (as well as ws-a's), to be compared with the file.
  expect(sent.filter((s) => s.url.endsWith('/permissions/users/alice/registered-models')).map((s) => s.workspace).sort()).toEqual(['default', 'ws-a']);
  const batch = sent.find((s) => s.url.endsWith('/permissions/batch'))!;
  const calls = (batch.body as { calls: Array<{ path: string; workspace?: string }> }).calls;
  expect(calls).toEqual([{ method: 'POST', path: 'permissions/users/alice/registered-models/team-x', body: { permission: 'MANAGE' }, workspace: 'default' }]);
});

/** MLflow with workspaces `default` and `ws-a`, each holding an experiment named `team-x` (ids 1 and 2). */
const EXPERIMENTS: Record<string, { id: string; name: string }[]> = { default: [{ id: '1', name: 'team-x' }], 'ws-a': [{ id: '2', name: 'team-x' }] };
function mlflow(req: SeenRequest): { status: number; body: unknown } {
  const url = new URL(req.url, 'http://mlflow');
  const header = req.headers['x-mlflow-workspace'];
  const ws = typeof header === 'string' && header !== '' ? header : 'default';
  const missing = { status: 404, body: { error_code: 'RESOURCE_DOES_NOT_EXIST', message: 'not found' } };
  if (url.pathname === '/api/3.0/mlflow/server-info') return { status: 200, body: { workspaces_enabled: true } };
  if (url.pathname === '/api/3.0/mlflow/workspaces') return { status: 200, body: { workspaces: Object.keys(EXPERIMENTS).map((name) => ({ name })) } };
  const one = /^\/api\/3\.0\/mlflow\/workspaces\/([^/]+)$/.exec(url.pathname);
  if (one) return one[1]! in EXPERIMENTS ? { status: 200, body: { workspace: { name: one[1] } } } : missing;
  const here = EXPERIMENTS[ws] ?? [];
  const experiment = (e: { id: string; name: string } | undefined) => (e ? { status: 200, body: { experiment: { experiment_id: e.id, name: e.name, lifecycle_stage: 'active' } } } : missing);
  if (url.pathname.endsWith('/experiments/get-by-name')) return experiment(here.find((e) => e.name === url.searchParams.get('experiment_name')));
  if (url.pathname.endsWith('/experiments/get')) return experiment(here.find((e) => e.id === url.searchParams.get('experiment_id')));
  if (url.pathname.endsWith('/registered-models/get')) return { status: 200, body: { registered_model: { name: url.searchParams.get('name') } } };
  return { status: 200, body: {} };
}

describe('policy apply with MLFLOW_WORKSPACE naming another workspace than default (real flowgate, MLflow with workspaces)', () => {
  let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
  let fg: TestFlowgate;
  const dir = mkdtempSync(join(tmpdir(), 'flowgate-policy-ws-'));

  const policy = async (args: string[], doc: PolicyDocument | string, workspace?: string) => {
    const { io: given, seen } = io(typeof doc === 'string' ? doc : stringify(doc), {
      MLFLOW_TRACKING_URI: fg.url,
      MLFLOW_TRACKING_USERNAME: ADMIN.username,
      MLFLOW_TRACKING_PASSWORD: ADMIN.token,
      ...(workspace !== undefined ? { MLFLOW_WORKSPACE: workspace } : {}),
    });
    const code = await runPolicy(args, given as never);
    return { code, ...seen };
  };
  /** An admin-API call in a workspace (none: no header, the default one). */
  const admin = (method: 'get' | 'post', path: string, workspace?: string, body?: object) => {
    let r = request(fg.url)[method](`/api/2.0/mlflow/${path}`).set('Authorization', adminAuth());
    if (workspace !== undefined) r = r.set('X-MLFLOW-WORKSPACE', workspace);
    return body ? r.set('Content-Type', 'application/json').send(JSON.stringify(body)) : r;
  };
  const permission = async (path: string, workspace?: string) => {
    const r = await admin('get', path, workspace);
    return r.status === 200 ? (r.body as { permission: { permission: string } }).permission.permission : r.status;
  };
  const patterns = async (workspace?: string) =>
    ((await admin('get', 'permissions/patterns', workspace)).body as { patterns: Array<{ pattern: string; permission: string }> }).patterns.map((p) => `${p.pattern} ${p.permission}`);

  beforeAll(async () => {
    upstream = await startStubUpstream(mlflow);
    fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url }, dir);
    await admin('post', 'users/create', undefined, { username: 'alice' }).expect(201);
    await admin('post', 'users/create', undefined, { username: 'bob' }).expect(201);
    // ws-a's own team-x model: alice reads it.
    await admin('post', 'permissions/users/alice/registered-models/team-x', 'ws-a', { permission: 'READ' }).expect(201);
    // Membership by pattern: kept in no workspace, listed in each.
    await admin('post', 'permissions/users/alice/patterns', 'ws-a', { resource_type: 'workspace', pattern: 'ws-*', permission: 'USE' }).expect((r) => expect(r.status, r.text).toBeLessThan(300));
  }, 60_000);
  afterAll(async () => {
    await fg?.close();
    await upstream?.close();
    removeDir(dir);
  });

  const file: PolicyDocument = policyDocument.parse({
    version: 1,
    users: [{ username: 'alice' }, { username: 'bob' }],
    grants: [
      { experiment: 'team-x', user: 'alice', permission: 'MANAGE' },
      { experiment: 'team-x', user: 'bob', permission: 'MANAGE' },
      { registered_model: 'team-x', user: 'alice', permission: 'MANAGE' },
      { registered_model: 'team-x', in_workspace: 'ws-a', user: 'alice', permission: 'READ' },
    ],
    patterns: [
      { resource_type: 'registered_model', pattern: 'x-*', user: 'alice', permission: 'READ' },
      { resource_type: 'workspace', pattern: 'ws-*', user: 'alice', permission: 'USE' },
    ],
  });

  it("bob's MANAGE on the default workspace's experiment team-x is made on it (id 1), not on ws-a's team-x (id 2)", async () => {
    const bobs = policyDocument.parse({ version: 1, users: [{ username: 'bob' }], grants: [{ experiment: 'team-x', user: 'bob', permission: 'MANAGE' }] });
    const applied = await policy(['apply', '-'], bobs, 'ws-a');
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out).toBe('+ grant experiment:team-x user:bob MANAGE\n');
    expect(await permission('permissions/users/bob/experiments/2', 'ws-a')).toBe(404);
    expect(await permission('permissions/users/bob/experiments/1')).toBe('MANAGE');
  });

  it("makes the untagged grants in the default workspace (the experiment named there), leaves ws-a's as they are, and the diff lines say no workspace", async () => {
    const applied = await policy(['apply', '-'], file, 'ws-a');
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out.split('\n').filter(Boolean).sort()).toEqual([
      '+ grant experiment:team-x user:alice MANAGE',
      '+ grant registered_model:team-x user:alice MANAGE',
      '+ pattern registered_model:x-* user:alice READ',
    ]);
    // In default: MANAGE on experiment 1 (default's team-x), on default's team-x model, and the pattern.
    expect(await permission('permissions/users/alice/experiments/1')).toBe('MANAGE');
    expect(await permission('permissions/users/alice/registered-models/team-x')).toBe('MANAGE');
    expect(await patterns()).toEqual(['x-* READ', 'ws-* USE']);
    // In ws-a: nothing on experiment 2 (ws-a's team-x), its model still READ, no pattern.
    expect(await permission('permissions/users/alice/experiments/2', 'ws-a')).toBe(404);
    expect(await permission('permissions/users/alice/registered-models/team-x', 'ws-a')).toBe('READ');
    expect(await patterns('ws-a')).toEqual(['ws-* USE']);
  });

  it('applied again with MLFLOW_WORKSPACE=ws-a, without it, or with `in_workspace: default` spelled out, it changes nothing', async () => {
    for (const ws of ['ws-a', undefined, 'default']) {
      const again = await policy(['apply', '-'], file, ws);
      expect(again.code, again.err).toBe(0);
      expect(again.out, String(ws)).toBe('');
      expect(again.err).toContain('no changes');
    }
    const spelled = {
      ...file,
      grants: file.grants.map((g) => ({ in_workspace: 'default', ...g })),
      patterns: file.patterns.map((p) => ({ ...p, in_workspace: 'default' })),
    };
    const again = await policy(['apply', '-'], spelled, 'ws-a');
    expect(again.code, again.err).toBe(0);
    expect(again.out).toBe('');
  });

  it('export in ws-a holds only ws-a, tagged; export of every workspace holds the default one untagged, which applies back unchanged', async () => {
    const inA = parse((await policy(['export'], '', 'ws-a')).out) as PolicyDocument;
    expect(inA.grants).toEqual([{ registered_model: 'team-x', in_workspace: 'ws-a', user: 'alice', permission: 'READ' }]);
    expect(inA.patterns).toEqual([{ resource_type: 'workspace', pattern: 'ws-*', user: 'alice', permission: 'USE' }]);
    const all = await policy(['export'], '');
    expect(all.code, all.err).toBe(0);
    const doc = policyDocument.parse(parse(all.out));
    expect(doc.grants).toEqual(expect.arrayContaining(file.grants));
    expect(doc.grants).toHaveLength(4);
    // The membership pattern once, untagged (listed in every workspace, kept in none).
    expect(doc.patterns).toEqual(file.patterns);
    expect((await policy(['apply', '-', '--prune'], all.out, 'ws-a')).out).toBe('');
  });

  it('--prune with MLFLOW_WORKSPACE=ws-a removes in each workspace what the file lacks there, saying which workspace outside default', async () => {
    const fewer = { ...file, grants: file.grants.filter((g) => g.experiment !== undefined), patterns: [] };
    const dry = await policy(['apply', '-', '--prune', '--dry-run'], fewer, 'ws-a');
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out.split('\n').filter(Boolean).sort()).toEqual([
      '- grant registered_model:team-x user:alice MANAGE',
      '- grant workspace:ws-a registered_model:team-x user:alice READ',
      '- pattern registered_model:x-* user:alice READ',
      '- pattern workspace:ws-* user:alice USE',
    ]);
    expect((await policy(['apply', '-', '--prune'], fewer, 'ws-a')).code).toBe(0);
    expect(await permission('permissions/users/alice/experiments/1')).toBe('MANAGE');
    expect(await permission('permissions/users/alice/registered-models/team-x')).toBe(404);
    expect(await permission('permissions/users/alice/registered-models/team-x', 'ws-a')).toBe(404);
    expect(await patterns()).toEqual([]);
  });
});
