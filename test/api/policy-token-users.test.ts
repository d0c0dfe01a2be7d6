import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPolicy } from '../../src/commands/policy.js';
import type { PolicyDocument } from '../../src/commands/policy-document.js';
import { ADMIN, adminAuth, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { newKey, serviceAccountClaims, signWith, type IssuerKey } from '../helpers/jwt-issuers.js';

/**
 * `flowgate policy export` → `apply` with users a token made (a Kubernetes service account, in its
 * namespace's group by its token). The file names none of them: applied to another flowgate, a
 * membership of a service account is refused by the admin API, and a user of the name would lock the
 * real service account out at its first call. Two flowgates, each on its own store, one cluster.
 */
const CLUSTER = 'https://kubernetes.default.svc.cluster.local';
const AUD = 'flowgate';
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let a: TestFlowgate;
let b: TestFlowgate;
const dirs: string[] = [];
let clusterKey: IssuerKey;

async function policy(fg: TestFlowgate, args: string[]) {
  let out = '';
  let err = '';
  const code = await runPolicy(args, {
    env: { MLFLOW_TRACKING_URI: fg.url, MLFLOW_TRACKING_USERNAME: ADMIN.username, MLFLOW_TRACKING_PASSWORD: ADMIN.token },
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    readFile: async (p) => readFileSync(p, 'utf8'),
  });
  return { code, out, err };
}
const saBearer = async (ns: string, name: string) => `Bearer ${await signWith(clusterKey, serviceAccountClaims(CLUSTER, ns, name, AUD))}`;
const admin = (fg: TestFlowgate, method: 'get' | 'post', path: string, body?: object) => {
  const r = request(fg.url)[method](`/api/2.0/mlflow/${path}`).set('Authorization', adminAuth());
  return body ? r.set('Content-Type', 'application/json').send(JSON.stringify(body)) : r;
};
/** The service account calls: its groups, and its permissions as MLflow basic-auth lists them. */
async function asServiceAccount(fg: TestFlowgate, ns: string, name: string) {
  const auth = await saBearer(ns, name);
  const perms = await request(fg.url).get('/api/3.0/mlflow/users/current/permissions').set('Authorization', auth);
  const me = await request(fg.url).get('/api/2.0/mlflow/permissions/users/current').set('Authorization', auth);
  return { status: perms.status, groups: me.body.user?.groups as string[] | undefined, permissions: perms.body.permissions as Array<Record<string, string>> | undefined };
}
const file = (name: string) => join(dirs[0]!, name);

beforeAll(async () => {
  upstream = await startStubUpstream();
  clusterKey = await newKey('cluster-key');
  const start = async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flowgate-policy-token-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'cluster-jwks.json'), JSON.stringify({ keys: [clusterKey.publicJwk] }));
    return startTestFlowgate(
      { FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ kind: 'kubernetes', issuer: CLUSTER, audience: AUD, jwks_file: join(dir, 'cluster-jwks.json') }]) },
      dir,
    );
  };
  a = await start();
  b = await start();
  // On a: the service account has called (made, in k8s:team-a), the namespace group and the account itself hold grants.
  expect((await asServiceAccount(a, 'team-a', 'pipelines')).status).toBe(200);
  await admin(a, 'post', `permissions/groups/${encodeURIComponent('k8s:team-a')}/registered-models/m`, { permission: 'READ' }).expect(201);
  await admin(a, 'post', 'permissions/users/k8s.team-a.pipelines/registered-models/own-m', { permission: 'EDIT' }).expect(201);
  await admin(a, 'post', 'users/create', { username: 'robot', is_service_account: true }).expect(201);
  await admin(a, 'post', 'permissions/groups', { group_name: 'editors' }).expect(201);
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await upstream?.close();
  for (const d of dirs) removeDir(d);
});

describe('policy export → apply and the users a token made', () => {
  it('the export leaves the service account out with its membership and grants (saying so); the file applies to another flowgate, where the account then joins its group at its first call; applied back, even with --prune, it changes nothing', async () => {
    const exported = await policy(a, ['export', '-o', file('policy.yaml')]);
    expect(exported.code, exported.err).toBe(0);
    const text = readFileSync(file('policy.yaml'), 'utf8');
    expect(text).not.toContain('k8s.team-a.pipelines');
    const doc = parse(text) as PolicyDocument;
    expect(doc.groups.find((g) => g.name === 'k8s:team-a')).toEqual({ name: 'k8s:team-a', members: [] });
    expect(doc.service_accounts.map((s) => s.username)).toEqual(['robot']);
    expect(exported.err).toContain("flowgate: left out user k8s.team-a.pipelines: its issuer's token made it");
    expect(exported.err).toContain('with its 1 grants and pattern grants');

    const applied = await policy(b, ['apply', file('policy.yaml')]);
    expect(applied.code, applied.err).toBe(0);
    expect(applied.out).toContain('+ group k8s:team-a');
    expect(applied.out).toContain('+ grant registered_model:m group:k8s:team-a READ');
    expect(applied.out).not.toContain('k8s.team-a.pipelines');
    const onB = await asServiceAccount(b, 'team-a', 'pipelines');
    expect(onB.status).toBe(200);
    expect(onB.groups).toEqual(['k8s:team-a']);
    expect(onB.permissions).toContainEqual(expect.objectContaining({ resource_type: 'registered_model', resource_pattern: 'm', permission: 'READ' }));

    for (const args of [['apply', file('policy.yaml')], ['apply', file('policy.yaml'), '--prune']]) {
      const again = await policy(a, args);
      expect(again.code, again.err).toBe(0);
      expect(again.out, args.join(' ')).toBe('');
      expect(again.err).toContain('no changes');
    }
    // The account kept its group and its own grant on a.
    const onA = await asServiceAccount(a, 'team-a', 'pipelines');
    expect(onA.groups).toEqual(['k8s:team-a']);
    expect((await admin(a, 'get', 'permissions/users/k8s.team-a.pipelines/registered-models').expect(200)).body.permissions).toContainEqual(
      expect.objectContaining({ name: 'own-m', permission: 'EDIT' }),
    );
  });

  it('a file naming service accounts as members (an older export, a hand edit) adds no such membership on either flowgate; one naming a Kubernetes service account to make is refused by the admin API (400), nothing applied, and the real account still comes in', async () => {
    expect((await asServiceAccount(a, 'team-c', 'pipelines')).status).toBe(200);
    const doc = parse(readFileSync(file('policy.yaml'), 'utf8')) as PolicyDocument;
    const older: PolicyDocument = {
      ...doc,
      service_accounts: [...doc.service_accounts, { username: 'k8s.team-c.pipelines', display_name: 'pipelines' }],
      groups: [...doc.groups.filter((g) => g.name !== 'editors'), { name: 'editors', members: ['robot'] }, { name: 'k8s:team-c', members: ['k8s.team-c.pipelines'] }],
    };
    writeFileSync(file('older.yaml'), stringify(older));

    const same = await policy(a, ['apply', file('older.yaml')]);
    expect(same.code, same.err).toBe(0);
    expect(same.out).not.toContain('+ member');
    expect(same.out).not.toContain('+ service account');
    expect(same.err).toContain('kept robot out of group editors: a service account joins no group');
    expect(same.err).toContain('kept k8s.team-c.pipelines out of group k8s:team-c');
    expect(same.err).toContain('kept user k8s.team-c.pipelines as its token made it');
    expect((await asServiceAccount(a, 'team-c', 'pipelines')).groups).toEqual(['k8s:team-c']);

    const other = await policy(b, ['apply', file('older.yaml')]);
    expect(other.out).toContain('+ service account k8s.team-c.pipelines');
    expect(other.out).not.toContain('+ member');
    expect(other.code).not.toBe(0);
    expect(other.err).toContain("has the shape of a Kubernetes service account's name, which only the kubernetes issuer makes");
    expect((await admin(b, 'get', 'permissions/users/k8s.team-c.pipelines')).status).toBe(404);
    expect((await admin(b, 'get', 'permissions/groups').expect(200)).body.groups.map((g: { name: string }) => g.name)).not.toContain('k8s:team-c');
    const onB = await asServiceAccount(b, 'team-c', 'pipelines');
    expect(onB.status).toBe(200);
    expect(onB.groups).toEqual(['k8s:team-c']);
  });
});
