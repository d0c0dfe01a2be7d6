import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { clusterNamesOf } from '../../src/bearer/cluster-names.js';
import { parseBearerIssuers } from '../../src/bearer/config.js';
import { provisionBearer } from '../../src/bearer/provision.js';
import { provisionLogin, type ProvisionOptions } from '../../src/oidc/provision.js';
import { createDirectory } from '../../src/principals/directory.js';
import { createPrincipalWriter } from '../../src/principals/principal-writer.js';
import { openDatabase, openSqliteStore } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';

const ISSUER = 'https://idp.example';
const OPTIONS: ProvisionOptions = {
  usernameClaim: 'preferred_username',
  displayNameClaim: 'name',
  groupsClaim: 'groups',
  adminRole: 'mlflow-admin',
  allowedRoles: undefined,
  protectedAdmin: 'admin',
};

function world() {
  const sql = openSqliteStore(':memory:');
  const directory = createDirectory(sql);
  const writer = createPrincipalWriter({ sql, directory, audit: createAuditLog(sql), bootstrapAdmin: 'admin' });
  const signIn = (sub: string, name: string, roles: string[] = [], iss = ISSUER) =>
    provisionLogin(sql, directory, writer, OPTIONS, { iss, sub, preferred_username: name, name, groups: roles });
  const person = (username: string, fields: Partial<Parameters<typeof directory.createUser>[0]> = {}) =>
    directory.createUser({ username, displayName: username, isAdmin: false, isServiceAccount: false, ...fields });
  const state = async () => JSON.stringify([await sql.all('SELECT * FROM users ORDER BY id'), await sql.all('SELECT * FROM group_members ORDER BY group_id, user_id'), await sql.all('SELECT * FROM groups ORDER BY id')]);
  return { sql, directory, writer, signIn, person, state };
}

describe('an OIDC sign-in is the identity-provider account, never the name claim alone', () => {
  it('refuses, changing nothing, a name held by the bootstrap admin, a local user, an admin, or an OIDC user of another account', async () => {
    const w = world();
    await w.person('admin', { isAdmin: true });
    await w.person('tina');
    await w.person('ops', { isAdmin: true });
    expect(await w.signIn('carl-sub', 'carl')).toMatchObject({ ok: true });
    const before = await w.state();
    for (const [sub, name, roles, holder, iss] of [
      ['x1', 'admin', ['mlflow-admin'], 'bootstrap_admin', ISSUER],
      ['x2', 'tina', ['team'], 'local_user', ISSUER],
      ['x3', 'ops', [], 'local_user', ISSUER],
      ['x4', 'carl', [], 'other_account', ISSUER],
      ['carl-sub', 'carl', [], 'other_account', 'https://other-idp.example'],
    ] as const) {
      expect(await w.signIn(sub, name, [...roles], iss), `${name} as ${iss} ${sub}`).toEqual({ ok: false, reason: 'name_taken', username: name, holder });
    }
    expect(await w.state()).toBe(before);
  });

  it('binds a user an administrator linked (sign-in oidc) at their first sign-in, and only that account after', async () => {
    const w = world();
    const alice = await w.person('alice', { signIn: 'oidc' });
    const first = await w.signIn('alice-sub', 'alice', ['team']);
    expect(first).toMatchObject({ ok: true, user: { id: alice.id } });
    expect(await w.directory.userById(alice.id)).toMatchObject({ signIn: 'oidc', oidcIssuer: ISSUER, oidcSubject: 'alice-sub' });
    expect(await w.signIn('mallory-sub', 'alice')).toMatchObject({ ok: false, reason: 'name_taken', holder: 'other_account' });
    // The bound account signs in as alice whatever name its provider sends later.
    expect(await w.signIn('alice-sub', 'alice.smith')).toMatchObject({ ok: true, user: { id: alice.id, username: 'alice' } });
    expect(await w.directory.userByName('alice.smith')).toBeUndefined();
  });

  it('an administrator unlinking a user (sign-in local) drops the binding; relinking awaits the next sign-in', async () => {
    const w = world();
    expect(await w.signIn('bob-sub', 'bob')).toMatchObject({ ok: true });
    const bob = (await w.directory.userByName('bob'))!;
    expect(await w.writer.setSignIn('admin', bob, 'local')).toBe(true);
    expect(await w.signIn('bob-sub', 'bob')).toMatchObject({ ok: false, holder: 'local_user' });
    expect(await w.writer.setSignIn('admin', (await w.directory.userByName('bob'))!, 'oidc')).toBe(true);
    expect(await w.signIn('bob-new-sub', 'bob')).toMatchObject({ ok: true, user: { id: bob.id } });
  });

  it('never binds the bootstrap admin, and refuses to link it or a service account', async () => {
    const w = world();
    const admin = await w.person('admin', { isAdmin: true });
    const sa = await w.person('pipelines', { isServiceAccount: true });
    await expect(w.writer.setSignIn('root', admin, 'oidc')).rejects.toThrow(/bootstrap administrator/);
    await expect(w.writer.setSignIn('root', sa, 'oidc')).rejects.toThrow(/service account/);
    expect(await w.signIn('pipelines', 'pipelines')).toMatchObject({ ok: false, reason: 'service_account' });
  });

  it('refuses, changing nothing, a service account a bearer token of the sign-in issuer made for the same account', async () => {
    const w = world();
    // A bearer issuer with service_accounts: true whose iss is the sign-in issuer: the account's first token made it.
    const made = await provisionBearer(w.sql, w.directory, w.writer, { protectedAdmin: 'admin', signInIssuer: ISSUER }, {
      issuer: ISSUER,
      subject: 'ci-sub',
      username: 'ci',
      displayName: 'ci',
      groups: undefined,
      serviceAccount: true,
      expiresAt: Date.now() + 60_000,
    });
    expect(made).toMatchObject({ ok: true, user: { isServiceAccount: true, isAdmin: false } });
    const before = await w.state();
    expect(await w.signIn('ci-sub', 'ci', ['mlflow-admin', 'team'])).toEqual({ ok: false, reason: 'service_account', username: 'ci' });
    expect(await w.state()).toBe(before);
  });
});

describe('a user name from the email claim is taken only when the provider verified the address', () => {
  const EMAIL: ProvisionOptions = { ...OPTIONS, usernameClaim: 'email' };
  const signIn = (w: ReturnType<typeof world>, sub: string, email: string, verified?: unknown) =>
    provisionLogin(w.sql, w.directory, w.writer, EMAIL, { iss: ISSUER, sub, email, name: sub, ...(verified === undefined ? {} : { email_verified: verified }) });

  it('refuses, changing nothing, an unverified or unconfirmed address: not binding a user created ahead (an admin), not creating one', async () => {
    const w = world();
    const carol = await w.person('carol@corp.example', { isAdmin: true, signIn: 'oidc' });
    const before = await w.state();
    for (const verified of [false, undefined, 'false', 1])
      expect(await signIn(w, 'mallory-sub', 'carol@corp.example', verified), `email_verified ${String(verified)}`).toEqual({ ok: false, reason: 'unverified_email', username: 'carol@corp.example' });
    expect(await signIn(w, 'mallory-sub', 'newhire@corp.example', false)).toMatchObject({ ok: false, reason: 'unverified_email' });
    expect(await w.state()).toBe(before);
    expect(await signIn(w, 'carol-sub', 'carol@corp.example', true)).toMatchObject({ ok: true, user: { id: carol.id } });
    expect(await signIn(w, 'newhire-sub', 'newhire@corp.example', 'true')).toMatchObject({ ok: true, user: { username: 'newhire@corp.example' } });
  });

  it('reads email_verified only when the name comes from email', async () => {
    const w = world();
    expect(await provisionLogin(w.sql, w.directory, w.writer, OPTIONS, { iss: ISSUER, sub: 'dan-sub', preferred_username: 'dan', email: 'dan@corp.example', email_verified: false })).toMatchObject({ ok: true });
  });
});

/** The names a default kubernetes bearer issuer makes (`k8s.<namespace>.<name>`). */
const clusterNamesFor = () =>
  clusterNamesOf({
    issuers: parseBearerIssuers(JSON.stringify([{ kind: 'kubernetes', issuer: 'https://k8s.example', audience: 'mlflow', jwks_file: '/dev/null' }]), 'FLOWGATE_BEARER_ISSUERS', [])!,
    clockSkewSeconds: 30,
    maxTokenBytes: 8192,
  });

describe('a linked account signs in as its user whatever name the provider sends later', () => {
  it('no name, a name flowgate would not make, a Kubernetes-shaped one, an unverified address: the linked user, unchanged name', async () => {
    const w = world();
    const withClusters: ProvisionOptions = { ...OPTIONS, clusterNames: clusterNamesFor() };
    const first = await provisionLogin(w.sql, w.directory, w.writer, withClusters, { iss: ISSUER, sub: 'jose-sub', preferred_username: 'jose', groups: ['team'] });
    expect(first).toMatchObject({ ok: true });
    const jose = first.ok ? first.user : undefined;
    for (const later of ['josé', 'Jose Garcia', 'x'.repeat(200), 'k8s.team-b.pipelines', undefined]) {
      const r = await provisionLogin(w.sql, w.directory, w.writer, withClusters, { iss: ISSUER, sub: 'jose-sub', ...(later === undefined ? {} : { preferred_username: later }), groups: ['team'] });
      expect(r, String(later)).toMatchObject({ ok: true, user: { id: jose!.id, username: 'jose', displayName: 'jose' } });
    }
    const email: ProvisionOptions = { ...OPTIONS, usernameClaim: 'email' };
    expect(await provisionLogin(w.sql, w.directory, w.writer, email, { iss: ISSUER, sub: 'kim-sub', email: 'kim@corp.example', email_verified: true })).toMatchObject({ ok: true });
    // The provider still knows the same account; its address is unverified since (changed in the account console).
    expect(await provisionLogin(w.sql, w.directory, w.writer, email, { iss: ISSUER, sub: 'kim-sub', email: 'kim@elsewhere.example', email_verified: false })).toMatchObject({
      ok: true,
      user: { username: 'kim@corp.example' },
    });
    expect(await w.directory.userByName('josé')).toBeUndefined();
  });

  it('an account linked to no one is still refused for such a name, changing nothing', async () => {
    const w = world();
    const before = await w.state();
    expect(await provisionLogin(w.sql, w.directory, w.writer, OPTIONS, { iss: ISSUER, sub: 'new-sub' })).toEqual({ ok: false, reason: 'no_username' });
    expect(await w.signIn('new-sub', 'Jose Garcia')).toEqual({ ok: false, reason: 'bad_username', username: 'Jose Garcia' });
    expect(await w.state()).toBe(before);
  });
});

describe('the principal writer keeps the bootstrap admin', () => {
  it('refuses to demote or delete it, and changes nothing', async () => {
    const w = world();
    const admin = await w.person('admin', { isAdmin: true });
    const before = await w.state();
    await expect(w.writer.updateUser('root', admin, 'Admin', false)).rejects.toMatchObject({ status: 400, code: 'INVALID_PARAMETER_VALUE' });
    await expect(w.writer.deleteUser('root', admin)).rejects.toMatchObject({ status: 400 });
    expect(await w.state()).toBe(before);
    // Its display name is an ordinary change.
    expect(await w.writer.updateUser('root', admin, 'The operator', true)).toMatchObject({ displayName: 'The operator', isAdmin: true });
  });
});

describe('migration 11 on a store from before bindings', () => {
  it('keeps users who signed in through OIDC OIDC users awaiting a binding; everyone else is local', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'fg-identity-')), 'p.db');
    const before = MIGRATIONS.filter((m) => m.version < 11);
    const old = openDatabase(path, before);
    const add = old.prepare("INSERT INTO users (username, display_name, is_service_account, created_at) VALUES (?, ?, ?, 0) RETURNING id");
    const audit = old.prepare("INSERT INTO audit_log (at, actor, action, target) VALUES (0, ?, ?, ?)");
    add.get('made-at-sign-in', 'm', 0);
    audit.run('oidc', 'user.create', 'user:made-at-sign-in');
    add.get('precreated-then-signed-in', 'p', 0);
    audit.run('admin', 'user.create', 'user:precreated-then-signed-in');
    audit.run('oidc', 'group.memberships', 'user:precreated-then-signed-in');
    const withSession = add.get('session-only', 's', 0) as { id: number };
    old.prepare("INSERT INTO sessions (id_hash, user_id, csrf_secret, created_at, last_seen_at, expires_at, id_token) VALUES ('h', ?, 'c', 0, 0, 9e15, 'a.b.c')").run(withSession.id);
    add.get('token-user', 't', 0);
    audit.run('admin', 'user.create', 'user:token-user');
    add.get('pipelines', 'sa', 1);
    audit.run('oidc', 'user.create', 'user:pipelines');
    old.close();

    const db = openDatabase(path);
    const rows = db.prepare('SELECT username, sign_in, oidc_subject FROM users ORDER BY username').all();
    expect(rows).toEqual([
      { username: 'made-at-sign-in', sign_in: 'oidc', oidc_subject: null },
      { username: 'pipelines', sign_in: 'local', oidc_subject: null },
      { username: 'precreated-then-signed-in', sign_in: 'oidc', oidc_subject: null },
      { username: 'session-only', sign_in: 'oidc', oidc_subject: null },
      { username: 'token-user', sign_in: 'local', oidc_subject: null },
    ]);
    db.close();
  });
});

describe("a sign-in takes no name or group a Kubernetes bearer issuer makes", () => {
  const problems: string[] = [];
  const issuers = parseBearerIssuers(JSON.stringify([{ kind: 'kubernetes', issuer: 'https://k8s.example', audience: 'mlflow', jwks_file: '/dev/null' }]), 'FLOWGATE_BEARER_ISSUERS', problems);
  const clusterNames = clusterNamesOf({ issuers: issuers!, clockSkewSeconds: 30, maxTokenBytes: 8192 });
  const withClusters: ProvisionOptions = { ...OPTIONS, clusterNames };

  it("refuses a name of a service account's shape, in any case, and leaves a namespace's group out of the memberships", async () => {
    const w = world();
    const signIn = (sub: string, name: string, roles: string[]) =>
      provisionLogin(w.sql, w.directory, w.writer, withClusters, { iss: ISSUER, sub, preferred_username: name, name, groups: roles });
    const before = await w.state();
    for (const name of ['k8s.team-b.pipelines', 'K8S.team-b.pipelines'])
      expect(await signIn(`s-${name}`, name, [])).toEqual({ ok: false, reason: 'name_taken', username: name, holder: 'kubernetes_name' });
    expect(await w.state()).toBe(before);
    const eve = await signIn('eve-sub', 'eve', ['k8s:team-a', 'K8S:team-a', 'analysts']);
    expect(eve).toMatchObject({ ok: true });
    expect((await w.directory.listGroups()).map((g) => g.name)).toEqual(['analysts']);
    // Without a kubernetes issuer the same sign-in is a user like any other.
    expect(await provisionLogin(w.sql, w.directory, w.writer, OPTIONS, { iss: ISSUER, sub: 'k-sub', preferred_username: 'k8s.team-b.pipelines', groups: ['k8s:team-a'] })).toMatchObject({ ok: true });
  });
});
