import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { importStore, runImport } from '../../src/commands/import.js';
import { loadConfig } from '../../src/config.js';
import { applyPlan } from '../../src/import/apply-plan.js';
import { provisionLogin } from '../../src/oidc/provision.js';
import { openStore } from '../../src/store/store.js';
import { ADMIN } from '../helpers/flowgate.js';
import { storeSettings } from '../helpers/test-store.js';
import { BASIC_AUTH_ROLES_TABLES } from '../helpers/basic-auth-db.js';

/**
 * `flowgate import` run against a store that is already in use: people and groups made by SCIM, by
 * sign-ins and by administrators, and changes made since an earlier import. What the import may not
 * do there: merge a source role into a flowgate group of the same name (its members would gain the
 * role's grants, the role's members the group's), promote a service account, give a password to a
 * service account or to someone who signs in through the identity provider, bring back what was
 * de-provisioned or revoked since the first run, or make `Alice` beside `alice`. And what it must do:
 * let people from mlflow-oidc-auth sign in through OIDC.
 */
const work = mkdtempSync(join(tmpdir(), 'flowgate-import-live-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let seq = 0;

const HASH = 'scrypt:32768:8:1$salt$00';
const OIDC_ENV = {
  FLOWGATE_OIDC_ISSUER_URL: 'http://127.0.0.1:9/realms/none',
  FLOWGATE_OIDC_CLIENT_ID: 'flowgate',
  FLOWGATE_OIDC_REDIRECT_URL: 'http://127.0.0.1:8080/flowgate/callback',
  FLOWGATE_SESSION_COOKIE_SECURE: 'false',
};

/** A basic-auth database (roles generation) holding `sql`'s rows. */
function basicAuthDb(rows: string): string {
  const path = join(work, `basic-${++seq}.db`);
  const db = new Database(path);
  db.exec(`${BASIC_AUTH_ROLES_TABLES}
    ${rows}`);
  db.close();
  return `sqlite:///${path}`;
}

/** An mlflow-oidc-auth database (users, groups, experiment grants) holding `rows`. */
function oidcAuthDb(rows: string): string {
  const path = join(work, `oidc-${++seq}.db`);
  const db = new Database(path);
  db.exec(`
    CREATE TABLE alembic_version (version_num TEXT);
    INSERT INTO alembic_version VALUES ('test');
    CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT, display_name TEXT, is_admin BOOLEAN, is_service_account BOOLEAN);
    CREATE TABLE groups (id INTEGER PRIMARY KEY, group_name TEXT);
    CREATE TABLE user_groups (id INTEGER PRIMARY KEY, user_id INTEGER, group_id INTEGER);
    CREATE TABLE experiment_permissions (id INTEGER PRIMARY KEY, experiment_id TEXT, user_id INTEGER, permission TEXT);
    CREATE TABLE experiment_group_permissions (id INTEGER PRIMARY KEY, experiment_id TEXT, group_id INTEGER, permission TEXT);
    ${rows}`);
  db.close();
  return `sqlite:///${path}`;
}

type Live = Awaited<ReturnType<typeof liveStore>>;
const opened: Array<{ close: () => Promise<void> }> = [];
afterEach(async () => {
  for (const l of opened.splice(0)) await l.close();
});

/** A store in use (open beside the import, as a running flowgate's is), and the CLI run against it. */
async function liveStore(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(work, 'store-'));
  const config = loadConfig({ ...(await storeSettings(dir)), FLOWGATE_ADMIN_USERNAME: ADMIN.username, FLOWGATE_ADMIN_TOKEN: ADMIN.token, FLOWGATE_DEFAULT_PERMISSION: 'READ', ...env });
  const store = await openStore({ dbPath: config.dbPath, databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres });
  const s = importStore(store.sql, ADMIN.username);
  const live = {
    config,
    sql: store.sql,
    s,
    async run(...args: string[]) {
      let out = '';
      let err = '';
      const code = await runImport(args, config, { out: (t) => void (out += t), err: (t) => void (err += t) });
      return { code, out, err };
    },
    user: (name: string) => s.directory.userByName(name),
    group: (name: string) => s.directory.groupByName(name),
    async members(group: string) {
      return (await s.directory.membersOfGroup((await s.directory.groupByName(group))!.id)).map((u) => u.username);
    },
    async grantOf(type: 'user' | 'group', name: string, kind: 'experiment' | 'registered_model', id: string) {
      const who = type === 'user' ? await s.directory.userByName(name) : await s.directory.groupByName(name);
      return who && s.grants.get({ type, id: who.id }, kind, id);
    },
    async patternOf(type: 'user' | 'group', name: string, kind: 'experiment' | 'registered_model', pattern: string) {
      const who = type === 'user' ? await s.directory.userByName(name) : await s.directory.groupByName(name);
      return who && s.patterns.get({ type, id: who.id }, kind, pattern);
    },
    audited: async () => (await store.sql.get<{ n: number }>('SELECT count(*) AS n FROM audit_log'))!.n,
    close: () => store.close(),
  };
  opened.push(live);
  return live;
}

describe('flowgate import into a store already in use: existing groups', () => {
  // SCIM's group `ml`: carol in it, MANAGE on the production model. The source's role `ml`: bob, EDIT on every model, MANAGE on experiment 7.
  const source = () =>
    basicAuthDb(`
      INSERT INTO users VALUES (1, 'bob', '${HASH}', 0);
      INSERT INTO roles VALUES (1, 'ml', 'default', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES (1, 'registered_model', '*', 'EDIT'), (1, 'experiment', '7', 'MANAGE');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1);`);
  const scimGroup = async (l: Live) => {
    const carol = await l.s.principalWriter.createUser('scim', { username: 'carol', displayName: 'carol', isAdmin: false, isServiceAccount: false, origin: 'scim' });
    const ml = await l.s.principalWriter.createGroup('scim', 'ml', 'scim');
    await l.s.principalWriter.addMember('scim', ml, carol);
    await l.s.grantWriter.create('admin', { grantee: { type: 'group', id: ml.id }, name: 'ml' }, { kind: 'registered_model', id: 'prod' }, 'MANAGE');
  };

  it("a source role named like a SCIM group is refused: bob gains no MANAGE on the group's model, carol none of the role's grants", async () => {
    const l = await liveStore();
    await scimGroup(l);
    const r = await l.run('mlflow-basic-auth', '--from', source());
    expect(r.code, r.err).toBe(0);
    expect(await l.members('ml')).toEqual(['carol']);
    // The group keeps what it had, and only that.
    expect(await l.grantOf('group', 'ml', 'registered_model', 'prod')).toBe('MANAGE');
    expect(await l.patternOf('group', 'ml', 'registered_model', '*')).toBeUndefined();
    expect(await l.grantOf('group', 'ml', 'experiment', '7')).toBeUndefined();
    // bob keeps what basic-auth gave him through the role, as grants of his own.
    expect(await l.grantOf('user', 'bob', 'experiment', '7')).toBe('MANAGE');
    expect(await l.patternOf('user', 'bob', 'registered_model', '*')).toBe('EDIT');
    expect(r.out).toContain('not imported: group ml: flowgate already has this group (origin scim, 1 members not in source)');
    expect(r.out).not.toContain('of group ml');
  });

  it('with --merge-existing the plan says the group exists and how many of its members the source does not name', async () => {
    const l = await liveStore();
    await scimGroup(l);
    const r = await l.run('mlflow-basic-auth', '--from', source(), '--merge-existing', '--dry-run');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('+ member bob of group ml (existing group, 1 members not in source)');
    expect(r.out).toContain('+ pattern group ml: EDIT on every registered_model matching * (existing group, 1 members not in source)');
    expect(r.out).not.toContain('+ group ml');
    const applied = await l.run('mlflow-basic-auth', '--from', source(), '--merge-existing');
    expect(applied.code, applied.err).toBe(0);
    expect(await l.members('ml')).toEqual(['bob', 'carol']);
  });

  it('a group made after the plan was read (a SCIM push meanwhile) fails the apply: nothing is written', async () => {
    const l = await liveStore();
    const plan = { source: 'mlflow-basic-auth (test)', users: [{ username: 'bob', isAdmin: false, isServiceAccount: false }], groups: [{ name: 'ml', members: ['bob'] }], grants: [], patterns: [], notImported: [], notes: [] };
    await l.s.principalWriter.createGroup('scim', 'ml', 'scim');
    await expect(applyPlan(plan, l.s, { actor: 'test', dryRun: false })).rejects.toThrow(/group ml exists in flowgate/);
    expect(await l.user('bob')).toBeUndefined();
  });
});

describe('flowgate import into a store already in use: existing users', () => {
  it('an existing service account the source calls an administrator is not promoted, and gets no password', async () => {
    const l = await liveStore();
    await l.s.principalWriter.createUser('admin', { username: 'bot', displayName: 'bot', isAdmin: false, isServiceAccount: true });
    const r = await l.run('mlflow-basic-auth', '--from', basicAuthDb(`INSERT INTO users VALUES (1, 'bot', '${HASH}', 1);`));
    expect(r.code, r.err).toBe(0);
    const bot = (await l.user('bot'))!;
    expect(bot.isAdmin).toBe(false);
    expect(await l.s.passwords.hashOf(bot.id)).toBeUndefined();
    expect(r.out).toContain("not imported: administrator rights of user bot (flowgate's bot is a service account");
    expect(r.out).toContain('not imported: password of bot: a service account');
  });

  it('prints a password hash\'s kind only, never the hash: one with no werkzeug method in front (a hex digest, a bare secret) is "unknown kind"', async () => {
    const l = await liveStore();
    const secret = 'deadbeefcafe0123456789abcdef0123456789abcdef';
    const r = await l.run('mlflow-basic-auth', '--from', basicAuthDb(`INSERT INTO users VALUES (1, 'hex', '${secret}', 0), (2, 'bee', '${HASH}', 0);`), '--dry-run');
    const json = await l.run('mlflow-basic-auth', '--from', basicAuthDb(`INSERT INTO users VALUES (1, 'hex', '${secret}', 0);`), '--dry-run', '--json');
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('+ password of hex (unknown kind)');
    expect(r.out).toContain('+ password of bee (scrypt)');
    for (const text of [r.out, r.err, json.out, json.err]) expect(text).not.toContain(secret.slice(0, 12));
  });

  it('a person bound to an identity-provider account gets no password: HTTP Basic past the IdP', async () => {
    const l = await liveStore(OIDC_ENV);
    await l.s.principalWriter.createUser('oidc', {
      username: 'dana',
      displayName: 'Dana',
      isAdmin: false,
      isServiceAccount: false,
      oidc: { issuer: 'https://idp.example', subject: 'dana-sub' },
      origin: 'oidc',
    });
    const r = await l.run('mlflow-basic-auth', '--from', basicAuthDb(`INSERT INTO users VALUES (1, 'dana', '${HASH}', 0);`));
    expect(r.code, r.err).toBe(0);
    expect(await l.s.passwords.hashOf((await l.user('dana'))!.id)).toBeUndefined();
    expect(r.out).toContain('not imported: password of dana: they sign in through the identity provider');
    expect(r.out).not.toContain('+ password of dana');
  });
});

describe('flowgate import: a service account joins no group', () => {
  const groupsOf = async (l: Live, name: string) => (await l.s.directory.groupsOfUser((await l.user(name))!.id)).map((g) => g.name);

  it('basic-auth: a role member flowgate holds as a service account stays in no group, and keeps what the role gave as its own', async () => {
    const l = await liveStore();
    await l.s.principalWriter.createUser('admin', { username: 'team-a-pipelines', displayName: 'pipelines', isAdmin: false, isServiceAccount: true });
    await l.s.principalWriter.createUser('admin', { username: 'ops-bot', displayName: 'ops', isAdmin: false, isServiceAccount: true });
    const r = await l.run(
      'mlflow-basic-auth',
      '--from',
      basicAuthDb(`
        INSERT INTO users VALUES (1, 'team-a-pipelines', '${HASH}', 0), (2, 'bob', '${HASH}', 0), (3, 'ops-bot', '${HASH}', 1);
        INSERT INTO roles VALUES (1, 'ml', 'default', NULL);
        INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES (1, 'registered_model', '*', 'EDIT'), (1, 'experiment', '7', 'MANAGE');
        INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1), (2, 1), (3, 1);`),
    );
    expect(r.code, r.err).toBe(0);
    expect(await l.members('ml')).toEqual(['bob']);
    for (const sa of ['team-a-pipelines', 'ops-bot']) {
      expect((await l.user(sa))!.isServiceAccount).toBe(true);
      expect(await groupsOf(l, sa), sa).toEqual([]);
      // Neither wider nor narrower: the role's answers, as its own.
      expect(await l.patternOf('user', sa, 'registered_model', '*'), sa).toBe('EDIT');
      expect(await l.grantOf('user', sa, 'experiment', '7'), sa).toBe('MANAGE');
      expect(r.out).toContain(`not imported: membership of ${sa} in group ml: flowgate's ${sa} is a service account, which joins no group`);
      expect(r.out).not.toContain(`+ member ${sa}`);
    }
    expect((await l.user('ops-bot'))!.isAdmin).toBe(false);
    // The person is a member as before, and the group keeps its grants.
    expect(await l.patternOf('group', 'ml', 'registered_model', '*')).toBe('EDIT');
    expect(await l.grantOf('user', 'bob', 'experiment', '7')).toBeUndefined();
  });

  it("mlflow-oidc-auth: its service accounts, and a user flowgate holds as one, stay in no group and get the plugin's answer (a group's denial winning) as their own", async () => {
    const l = await liveStore();
    await l.s.principalWriter.createUser('admin', { username: 'etl', displayName: 'etl', isAdmin: false, isServiceAccount: true });
    const r = await l.run(
      'mlflow-oidc-auth',
      '--from',
      oidcAuthDb(`
        INSERT INTO users VALUES (1, 'svc-bot', 'bot', 0, 1), (2, 'olga', 'Olga', 0, 0), (3, 'etl', 'ETL', 0, 0);
        INSERT INTO groups VALUES (1, 'ml'), (2, 'blocked');
        INSERT INTO user_groups (user_id, group_id) VALUES (1, 1), (2, 1), (3, 1), (1, 2);
        INSERT INTO experiment_group_permissions (experiment_id, group_id, permission) VALUES ('7', 1, 'EDIT'), ('8', 1, 'READ'), ('7', 2, 'NO_PERMISSIONS');`),
    );
    expect(r.code, r.err).toBe(0);
    expect((await l.user('svc-bot'))!.isServiceAccount).toBe(true);
    expect(await groupsOf(l, 'svc-bot')).toEqual([]);
    expect(await groupsOf(l, 'etl')).toEqual([]);
    expect(await l.members('ml')).toEqual(['olga']);
    // The plugin answered svc-bot NO_PERMISSIONS on 7 (blocked's denial wins) and READ on 8; etl EDIT and READ.
    expect(await l.grantOf('user', 'svc-bot', 'experiment', '7')).toBe('NO_PERMISSIONS');
    expect(await l.grantOf('user', 'svc-bot', 'experiment', '8')).toBe('READ');
    expect(await l.grantOf('user', 'etl', 'experiment', '7')).toBe('EDIT');
    expect(await l.grantOf('user', 'etl', 'experiment', '8')).toBe('READ');
    expect(await l.grantOf('group', 'ml', 'experiment', '7')).toBe('EDIT');
    expect(await l.grantOf('user', 'olga', 'experiment', '7')).toBeUndefined();
    expect(r.out).toContain('not imported: membership of service account svc-bot in group ml: a flowgate service account joins no group');
    expect(r.out).toContain('not imported: membership of service account svc-bot in group blocked');
    expect(r.out).toContain('not imported: membership of service account etl in group ml');
    expect(r.out).not.toMatch(/\+ member (svc-bot|etl) /);
  });

  it('a plan putting a service account in a group (one made since the plan was read) fails the apply: nothing is written', async () => {
    const l = await liveStore();
    await l.s.principalWriter.createUser('admin', { username: 'bot', displayName: 'bot', isAdmin: false, isServiceAccount: true });
    const plan = { source: 'mlflow-basic-auth (test)', users: [{ username: 'bot', isAdmin: false, isServiceAccount: false }], groups: [{ name: 'ml', members: ['bot'] }], grants: [], patterns: [], notImported: [], notes: [] };
    await expect(applyPlan(plan, l.s, { actor: 'test', dryRun: false })).rejects.toThrow(/member bot of group ml: bot is a service account/);
    const planned = { ...plan, users: [{ username: 'new-bot', isAdmin: false, isServiceAccount: true }], groups: [{ name: 'ml', members: ['new-bot'] }] };
    await expect(applyPlan(planned, l.s, { actor: 'test', dryRun: false })).rejects.toThrow(/member new-bot of group ml/);
    expect(await l.group('ml')).toBeUndefined();
    expect(await l.user('new-bot')).toBeUndefined();
  });
});

describe('flowgate import run again', () => {
  const source = () =>
    basicAuthDb(`
      INSERT INTO users VALUES (1, 'ann', '${HASH}', 0), (2, 'erin', '${HASH}', 0);
      INSERT INTO roles VALUES (1, '__user_1__', 'default', NULL), (2, 'team', 'default', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES (1, 'experiment', '5', 'EDIT'), (2, 'experiment', '6', 'MANAGE');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1), (1, 2), (2, 2);`);

  it('does not bring back a user de-provisioned since, nor raise a grant lowered since, unless --force', async () => {
    const l = await liveStore();
    const uri = source();
    const first = await l.run('mlflow-basic-auth', '--from', uri);
    expect(first.code, first.err).toBe(0);
    // Since: the identity provider (or an administrator) removed erin; an administrator lowered ann's EDIT.
    await l.s.principalWriter.deleteUser('scim', (await l.user('erin'))!);
    const ann = (await l.user('ann'))!;
    await l.s.grantWriter.update('admin', { grantee: { type: 'user', id: ann.id }, name: 'ann' }, { kind: 'experiment', id: '5' }, 'EDIT', 'NO_PERMISSIONS');
    const audited = await l.audited();

    const again = await l.run('mlflow-basic-auth', '--from', uri);
    expect(await l.user('erin')).toBeUndefined();
    expect(await l.grantOf('user', 'ann', 'experiment', '5')).toBe('NO_PERMISSIONS');
    expect(await l.audited()).toBe(audited);
    expect(again.code).toBe(1);
    expect(again.out).toContain('+ user erin');
    expect(again.out).toContain('~ grant user ann: NO_PERMISSIONS → EDIT on experiment 5');
    expect(again.out).toContain('# imported before: mlflow-basic-auth');
    expect(again.err).toContain('--force');

    // A dry run still shows the plan, and says why applying it takes --force.
    const dry = await l.run('mlflow-basic-auth', '--from', uri, '--dry-run');
    expect(dry.code, dry.err).toBe(0);
    expect(dry.out).toContain('# imported before:');
    expect(dry.out).toContain('+ user erin');

    const json = await l.run('mlflow-basic-auth', '--from', uri, '--json');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.out)).toMatchObject({ applied: false, imported_before: { source: 'mlflow-basic-auth (roles, revision f1a2b3c4d5e6)' } });

    // The group `team` is the first run's own: it is filled again without --merge-existing.
    expect(again.out).toContain('+ member erin of group team (made by an earlier import, 0 members not in source)');
    const forced = await l.run('mlflow-basic-auth', '--from', uri, '--force');
    expect(forced.code, forced.err).toBe(0);
    expect(await l.user('erin')).toBeDefined();
    expect(await l.grantOf('user', 'ann', 'experiment', '5')).toBe('EDIT');
    const applies = await l.sql.all<{ new_value: string }>("SELECT new_value FROM audit_log WHERE action = 'import.apply' ORDER BY id");
    expect(applies).toHaveLength(2);
    expect(JSON.parse(applies[1]!.new_value)).toMatchObject({ forced: true });
  });

  it('a second run with nothing to change is no error', async () => {
    const l = await liveStore();
    const uri = source();
    expect((await l.run('mlflow-basic-auth', '--from', uri)).code).toBe(0);
    const again = await l.run('mlflow-basic-auth', '--from', uri);
    expect(again.code, again.err).toBe(0);
    expect(again.err).toContain('no changes');
  });
});

describe('flowgate import mlflow-oidc-auth: sign-in', () => {
  const source = () =>
    oidcAuthDb(`
      INSERT INTO users VALUES (1, 'olga', 'Olga', 0, 0), (2, 'etl-bot', 'ETL', 0, 1), (3, 'root', 'Root', 1, 0);
      INSERT INTO groups VALUES (1, 'analysts');
      INSERT INTO user_groups (user_id, group_id) VALUES (1, 1);
      INSERT INTO experiment_group_permissions (experiment_id, group_id, permission) VALUES ('3', 1, 'READ');`);
  const claims = (username: string) => ({ iss: 'https://idp.example', sub: `${username}-sub`, preferred_username: username, groups: ['analysts'] });
  const signIn = (l: Live, username: string) =>
    provisionLogin(
      l.sql,
      l.s.directory,
      l.s.principalWriter,
      { usernameClaim: 'preferred_username', displayNameClaim: 'name', groupsClaim: 'groups', adminRole: undefined, allowedRoles: undefined, protectedAdmin: ADMIN.username },
      claims(username),
    );

  it('a person imported from mlflow-oidc-auth signs in through OIDC (not refused as a local user holding the name)', async () => {
    const l = await liveStore(OIDC_ENV);
    const r = await l.run('mlflow-oidc-auth', '--from', source());
    expect(r.code, r.err).toBe(0);
    const olga = (await l.user('olga'))!;
    // Before the fix: { ok: false, reason: 'name_taken', holder: 'local_user' }.
    expect(await signIn(l, 'olga')).toMatchObject({ ok: true, user: { id: olga.id, username: 'olga' } });
    expect((await l.user('root'))!.signIn).toBe('oidc');
    // A service account never signs in.
    expect((await l.user('etl-bot'))!.signIn).toBe('local');
    expect(r.out).toContain('+ user olga (signs in through OIDC)');
  });

  it('without OIDC configured, people come over as local users (as the admin API makes them)', async () => {
    const l = await liveStore();
    expect((await l.run('mlflow-oidc-auth', '--from', source())).code).toBe(0);
    expect((await l.user('olga'))!.signIn).toBe('local');
  });
});

describe('flowgate import: names flowgate does not take', () => {
  it('Alice beside alice, a non-ASCII name, and a role ML beside group ml are listed and left out', async () => {
    const l = await liveStore();
    await l.s.principalWriter.createUser('scim', { username: 'alice', displayName: 'alice', isAdmin: false, isServiceAccount: false, origin: 'scim' });
    await l.s.principalWriter.createGroup('scim', 'ml', 'scim');
    const uri = basicAuthDb(`
      INSERT INTO users VALUES (1, 'Alice', '${HASH}', 1), (2, 'jörg', '${HASH}', 0), (3, 'kim', '${HASH}', 0), (4, 'Kim', '${HASH}', 0), (5, 'lee', '${HASH}', 0);
      INSERT INTO roles VALUES (1, '__user_1__', 'default', NULL), (2, 'ML', 'default', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES (1, 'experiment', '1', 'MANAGE'), (2, 'experiment', '2', 'EDIT');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1), (2, 2), (5, 2);`);
    const r = await l.run('mlflow-basic-auth', '--from', uri);
    expect(r.code, r.err).toBe(0);
    expect((await l.s.directory.usersByNameIgnoringCase('alice')).map((u) => u.username)).toEqual(['alice']);
    expect(await l.user('jörg')).toBeUndefined();
    expect(await l.s.directory.usersByNameIgnoringCase('kim')).toEqual([]);
    expect(await l.group('ML')).toBeUndefined();
    expect(r.out).toContain("not imported: user Alice: flowgate has user 'alice', the same name in another case");
    expect(r.out).toContain('not imported: user "jörg": not a user name flowgate takes');
    expect(r.out).toContain("not imported: user kim: the source also has 'Kim'");
    expect(r.out).toContain("not imported: user Kim: the source also has 'kim'");
    expect(r.out).toContain("not imported: group ML: flowgate has group 'ml', the same name in another case");
    expect((await l.user('alice'))!.isAdmin).toBe(false);
    expect(await l.grantOf('user', 'alice', 'experiment', '1')).toBeUndefined();
    // lee keeps what the role gave her, as her own.
    expect(await l.grantOf('user', 'lee', 'experiment', '2')).toBe('EDIT');
    // Even merging, a name in another case is never merged.
    const merging = await l.run('mlflow-basic-auth', '--from', uri, '--merge-existing', '--dry-run');
    expect(merging.out).toContain("not imported: group ML: flowgate has group 'ml', the same name in another case");
  });

  it("names only a kubernetes issuer makes (k8s.<ns>.<name>, k8s:<ns>, any case) are left out, even where flowgate holds them; a refused group's members keep its answers as their own", async () => {
    const l = await liveStore({ FLOWGATE_BEARER_ISSUERS: JSON.stringify([{ kind: 'kubernetes', issuer: 'https://kubernetes.default.svc', audience: 'flowgate', jwks_file: '/dev/null' }]) });
    // The real service account of namespace team-a has called already (its first token made it, in its namespace group).
    const sa = await l.s.principalWriter.createUser('kubernetes', { username: 'k8s.team-a.pipelines', displayName: 'pipelines', isAdmin: false, isServiceAccount: true, origin: 'kubernetes' });
    const uri = basicAuthDb(`
      INSERT INTO users VALUES (1, 'bob', '${HASH}', 0), (2, 'k8s.team-b.pipelines', '${HASH}', 0), (3, 'K8S.team-c.etl', '${HASH}', 1), (4, 'k8s.team-a.pipelines', '${HASH}', 0);
      INSERT INTO roles VALUES (1, 'k8s:team-a', 'default', NULL), (2, 'K8S:Team-B', 'default', NULL), (3, '__user_4__', 'default', 4);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES (1, 'experiment', '7', 'EDIT'), (2, 'registered_model', '*', 'READ'), (3, 'experiment', '9', 'MANAGE');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1), (1, 2), (2, 1), (4, 3);`);
    for (const merge of [[], ['--merge-existing']]) {
      const r = await l.run('mlflow-basic-auth', '--from', uri, '--dry-run', ...merge);
      expect(r.code, r.err).toBe(0);
      expect(r.out).toContain("not imported: group k8s:team-a: has the shape of a Kubernetes namespace's group, which only the kubernetes issuer makes");
      expect(r.out).toContain("not imported: group K8S:Team-B: has the shape of a Kubernetes namespace's group");
      expect(r.out).toContain("not imported: user k8s.team-b.pipelines: has the shape of a Kubernetes service account's name, which only the kubernetes issuer makes");
      expect(r.out).toContain("not imported: user K8S.team-c.etl: has the shape of a Kubernetes service account's name");
      expect(r.out).toContain("not imported: user k8s.team-a.pipelines: has the shape of a Kubernetes service account's name");
    }
    const r = await l.run('mlflow-basic-auth', '--from', uri);
    expect(r.code, r.err).toBe(0);
    expect(await l.group('k8s:team-a')).toBeUndefined();
    expect(await l.s.directory.groupByName('K8S:Team-B')).toBeUndefined();
    expect(await l.user('k8s.team-b.pipelines')).toBeUndefined();
    expect(await l.s.directory.usersByNameIgnoringCase('k8s.team-c.etl')).toEqual([]);
    // The real service account gets nothing of the source's namesake (no password, no grant).
    expect(await l.s.passwords.hashOf(sa.id)).toBeUndefined();
    expect(await l.grantOf('user', 'k8s.team-a.pipelines', 'experiment', '9')).toBeUndefined();
    // bob keeps what the two roles gave him, as his own, and is in no namespace group.
    expect(await l.grantOf('user', 'bob', 'experiment', '7')).toBe('EDIT');
    expect(await l.patternOf('user', 'bob', 'registered_model', '*')).toBe('READ');
    expect(await l.s.directory.groupsOfUser((await l.user('bob'))!.id)).toEqual([]);
  });
});
