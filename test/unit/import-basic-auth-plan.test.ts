import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planBasicAuth } from '../../src/import/basic-auth-plan.js';
import { readBasicAuth } from '../../src/import/basic-auth-read.js';
import { openSourceDatabase } from '../../src/import/source-database.js';
import { BASIC_AUTH_ROLES_TABLES } from '../helpers/basic-auth-db.js';

/**
 * The basic-auth plan on databases shaped as MLflow's migrations leave them (the e2e test imports one
 * MLflow itself made): what has no exact flowgate form is listed and left out, never widened.
 */
const dir = mkdtempSync(join(tmpdir(), 'flowgate-plan-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function database(name: string, ddl: string): string {
  const path = join(dir, name);
  const db = new Database(path);
  db.exec(ddl);
  db.close();
  return `sqlite:///${path}`;
}

const plan = async (uri: string, mlflowDefault: 'READ' | 'EDIT' = 'READ') => {
  const db = await openSourceDatabase(uri);
  try {
    return planBasicAuth(await readBasicAuth(db), { mlflowDefault, flowgateDefault: 'READ' });
  } finally {
    await db.close();
  }
};

const ROLES_SCHEMA = `${BASIC_AUTH_ROLES_TABLES}
  -- The legacy tables stay on disk after the roles migration; the roles generation ignores them.
  CREATE TABLE experiment_permissions (id INTEGER PRIMARY KEY, experiment_id TEXT, user_id INTEGER, permission TEXT);
  INSERT INTO experiment_permissions VALUES (1, '99', 2, 'MANAGE');
`;

describe('planBasicAuth', () => {
  it('roles generation: roles become groups, own grants direct, * a pattern, DENY NO_PERMISSIONS; the rest listed', async () => {
    const uri = database(
      'roles.db',
      `${ROLES_SCHEMA}
      INSERT INTO users VALUES (1, 'admin', 'scrypt:32768:8:1$s$00', 1), (2, 'ann', 'pbkdf2:sha256:600000$s$00', 0), (3, 'bo', NULL, 0);
      INSERT INTO roles VALUES (1, '__user_2__', 'default', NULL), (2, 'team', 'default', NULL), (3, 'elsewhere', 'research', NULL), (4, '__user_3__', 'research', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES
        (1, 'experiment', '7', 'EDIT'), (1, 'registered_model', 'm', 'DENY'), (1, 'scorer', '7/my%2Fjudge', 'READ'),
        (2, 'experiment', '*', 'READ'), (2, 'gateway_endpoint', '*', 'USE'), (2, 'gateway_secret', 's-123', 'USE'),
        (2, 'run', '*', 'DENY'), (2, 'workspace', '*', 'USE'), (2, 'experiment', '8', 'USE'),
        (3, 'experiment', '1', 'MANAGE'), (4, 'experiment', '2', 'READ');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (2, 1), (2, 2), (3, 2), (3, 3), (3, 4);`,
    );
    const p = await plan(uri);
    expect(p.source).toBe('mlflow-basic-auth (roles, revision f1a2b3c4d5e6)');
    expect(p.users).toEqual([
      { username: 'admin', isAdmin: true, isServiceAccount: false, passwordHash: 'scrypt:32768:8:1$s$00' },
      { username: 'ann', isAdmin: false, isServiceAccount: false, passwordHash: 'pbkdf2:sha256:600000$s$00' },
      { username: 'bo', isAdmin: false, isServiceAccount: false },
    ]);
    expect(p.groups).toEqual([{ name: 'team', members: ['ann', 'bo'] }]);
    expect(p.grants).toEqual(
      expect.arrayContaining([
        { grantee: { type: 'user', name: 'ann' }, kind: 'experiment', id: '7', permission: 'EDIT' },
        { grantee: { type: 'user', name: 'ann' }, kind: 'registered_model', id: 'm', permission: 'NO_PERMISSIONS' },
        { grantee: { type: 'user', name: 'ann' }, kind: 'scorer', id: '7/my/judge', permission: 'READ' },
        // Experiments have no USE in flowgate: basic-auth's USE reads as READ there.
        { grantee: { type: 'group', name: 'team' }, kind: 'experiment', id: '8', permission: 'READ' },
      ]),
    );
    expect(p.patterns).toEqual(
      expect.arrayContaining([
        { grantee: { type: 'group', name: 'team' }, kind: 'experiment', pattern: '*', permission: 'READ' },
        { grantee: { type: 'group', name: 'team' }, kind: 'gateway_endpoint', pattern: '*', permission: 'USE' },
      ]),
    );
    // Nothing from the legacy table the roles migration left behind.
    expect(p.grants.some((g) => g.id === '99')).toBe(false);
    const left = p.notImported.join('\n');
    expect(left).toContain('workspace research: role elsewhere');
    expect(left).toContain('workspace research: grants of user bo');
    expect(left).toContain('role team: USE on gateway_secret s-123');
    expect(left).toContain('role team: DENY on every run');
    expect(left).toContain('role team: USE on the whole workspace');
    // No grant anywhere in the plan for what was left out.
    expect(p.grants.some((g) => g.kind === 'gateway_secret' || g.id === '1' || g.id === '2')).toBe(false);
  });

  it('pins a user\'s answer where flowgate\'s ranking alone would differ from basic-auth\'s strongest-wins', async () => {
    const uri = database(
      'pin.db',
      `${ROLES_SCHEMA}
      INSERT INTO users VALUES (1, 'cat', NULL, 0), (2, 'dan', NULL, 0);
      INSERT INTO roles VALUES (1, '__user_1__', 'default', NULL), (2, 'writers', 'default', NULL), (3, '__user_2__', 'default', NULL), (4, 'readers', 'default', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES
        (1, 'experiment', '5', 'READ'), (2, 'experiment', '5', 'EDIT'),
        (3, 'experiment', '*', 'READ'), (4, 'experiment', '*', 'MANAGE'), (4, 'experiment', '6', 'READ');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1), (1, 2), (2, 3), (2, 4);`,
    );
    const p = await plan(uri);
    // cat: own READ + role EDIT on 5 → basic-auth EDIT; flowgate would take the own READ.
    expect(p.grants).toContainEqual({ grantee: { type: 'user', name: 'cat' }, kind: 'experiment', id: '5', permission: 'EDIT' });
    expect(p.grants).not.toContainEqual({ grantee: { type: 'user', name: 'cat' }, kind: 'experiment', id: '5', permission: 'READ' });
    // dan: own * READ + role * MANAGE → MANAGE everywhere; on 6 the role's READ folds with both *s → MANAGE.
    expect(p.patterns).toContainEqual({ grantee: { type: 'user', name: 'dan' }, kind: 'experiment', pattern: '*', permission: 'MANAGE' });
    expect(p.grants).toContainEqual({ grantee: { type: 'user', name: 'dan' }, kind: 'experiment', id: '6', permission: 'MANAGE' });
    expect(p.notes.filter((n) => n.includes('as the plugin combined'))).toHaveLength(3);
  });

  it('a role refused as a group (flowgate has a group of that name): never merged, and each member still gets exactly what basic-auth answered them', async () => {
    const uri = database(
      'refused.db',
      `${ROLES_SCHEMA}
      INSERT INTO users VALUES (1, 'erin', NULL, 0), (2, 'finn', NULL, 0), (3, 'Gus', NULL, 0);
      INSERT INTO roles VALUES (1, 'readers', 'default', NULL), (2, 'blocked', 'default', NULL), (3, '__user_3__', 'default', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES
        (1, 'experiment', '*', 'READ'), (2, 'experiment', '3', 'DENY'), (2, 'registered_model', '*', 'MANAGE'), (3, 'experiment', '4', 'MANAGE');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1), (1, 2), (2, 1), (3, 2), (3, 3);`,
    );
    const db = await openSourceDatabase(uri);
    const state = await readBasicAuth(db).finally(() => db.close());
    const p = planBasicAuth(state, {
      mlflowDefault: 'READ',
      flowgateDefault: 'READ',
      refused: { users: new Map([['Gus', "user Gus: flowgate has user 'gus', the same name in another case"]]), groups: new Map([['blocked', 'group blocked: flowgate already has this group']]) },
    });
    expect(p.groups).toEqual([{ name: 'readers', members: ['erin', 'finn'] }]);
    expect(p.users.map((u) => u.username)).toEqual(['erin', 'finn']);
    expect([...p.grants, ...p.patterns].some((x) => x.grantee.name === 'blocked' || x.grantee.name === 'Gus')).toBe(false);
    // erin: blocked's DENY on 3 outranked readers' * READ in basic-auth, and its * MANAGE on models gave her those.
    expect(p.grants).toContainEqual({ grantee: { type: 'user', name: 'erin' }, kind: 'experiment', id: '3', permission: 'NO_PERMISSIONS' });
    expect(p.patterns).toContainEqual({ grantee: { type: 'user', name: 'erin' }, kind: 'registered_model', pattern: '*', permission: 'MANAGE' });
    // finn was never in blocked: nothing of his own.
    expect([...p.grants, ...p.patterns].some((x) => x.grantee.name === 'finn')).toBe(false);
    expect(p.notImported).toContain(
      'group blocked: flowgate already has this group (left out, with its grants and members: each member gets what basic-auth answered them as grants of their own)',
    );
    expect(p.notImported).toContain("user Gus: flowgate has user 'gus', the same name in another case (left out, with their grants and memberships)");
  });

  it('lifts positive grants to basic-auth\'s default_permission, never a DENY', async () => {
    const uri = database(
      'floor.db',
      `${ROLES_SCHEMA}
      INSERT INTO users VALUES (1, 'eve', NULL, 0);
      INSERT INTO roles VALUES (1, '__user_1__', 'default', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES (1, 'experiment', '1', 'READ'), (1, 'experiment', '2', 'DENY');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1);`,
    );
    const p = await plan(uri, 'EDIT');
    expect(p.grants).toEqual([
      { grantee: { type: 'user', name: 'eve' }, kind: 'experiment', id: '1', permission: 'EDIT' },
      { grantee: { type: 'user', name: 'eve' }, kind: 'experiment', id: '2', permission: 'NO_PERMISSIONS' },
    ]);
    expect(p.notes.join('\n')).toContain("default_permission was taken as EDIT, flowgate's FLOWGATE_DEFAULT_PERMISSION is READ");
  });

  it('per-user tables (before 3.13): direct grants as they are, a model grant covering the prompt of that name', async () => {
    const uri = database(
      'legacy.db',
      `CREATE TABLE alembic_version_auth (version_num TEXT);
      INSERT INTO alembic_version_auth VALUES ('0965eb92f5f0');
      CREATE TABLE users (id INTEGER PRIMARY KEY, username TEXT, password_hash TEXT, is_admin BOOLEAN);
      CREATE TABLE experiment_permissions (id INTEGER PRIMARY KEY, experiment_id TEXT, user_id INTEGER, permission TEXT);
      CREATE TABLE registered_model_permissions (id INTEGER PRIMARY KEY, name TEXT, user_id INTEGER, permission TEXT);
      CREATE TABLE scorer_permissions (id INTEGER PRIMARY KEY, experiment_id TEXT, scorer_name TEXT, user_id INTEGER, permission TEXT);
      INSERT INTO users VALUES (1, 'fay', 'pbkdf2:sha256:260000$s$00', 0);
      INSERT INTO experiment_permissions VALUES (1, '3', 1, 'NO_PERMISSIONS'), (2, '4', 1, 'READ');
      INSERT INTO registered_model_permissions VALUES (1, 'clf', 1, 'EDIT');
      INSERT INTO scorer_permissions VALUES (1, '3', 'a/b', 1, 'MANAGE');`,
    );
    const p = await plan(uri, 'EDIT');
    expect(p.source).toBe('mlflow-basic-auth (per-user tables, revision 0965eb92f5f0)');
    expect(p.groups).toEqual([]);
    expect(p.patterns).toEqual([]);
    const fay = { type: 'user', name: 'fay' };
    expect(p.grants).toEqual([
      { grantee: fay, kind: 'experiment', id: '3', permission: 'NO_PERMISSIONS' },
      // No default floor before 3.13: READ stays READ even with default_permission EDIT.
      { grantee: fay, kind: 'experiment', id: '4', permission: 'READ' },
      { grantee: fay, kind: 'registered_model', id: 'clf', permission: 'EDIT' },
      { grantee: fay, kind: 'prompt', id: 'clf', permission: 'EDIT' },
      { grantee: fay, kind: 'scorer', id: '3/a/b', permission: 'MANAGE' },
    ]);
  });

  it('a rule on an id MLflow never names (a tampered database) is listed and left out, and a scorer key that is not percent-encoded stops nothing', async () => {
    const uri = database(
      'odd-ids.db',
      `${ROLES_SCHEMA}
      INSERT INTO users VALUES (1, 'ann', NULL, 0);
      INSERT INTO roles VALUES (1, '__user_1__', 'default', NULL);
      INSERT INTO role_permissions (role_id, resource_type, resource_pattern, permission) VALUES
        (1, 'experiment', '01', 'EDIT'), (1, 'experiment', '7', 'READ'), (1, 'scorer', '7/50%', 'MANAGE'), (1, 'scorer', 'judge', 'MANAGE'),
        (1, 'registered_model', 'bad' || char(7), 'EDIT');
      INSERT INTO user_role_assignments (user_id, role_id) VALUES (1, 1);`,
    );
    const p = await plan(uri);
    expect(p.grants).toEqual([{ grantee: { type: 'user', name: 'ann' }, kind: 'experiment', id: '7', permission: 'READ' }]);
    const left = p.notImported.join('\n');
    for (const line of ['grants of user ann: EDIT on experiment "01" (', 'grants of user ann: MANAGE on scorer "7/50%" (', 'grants of user ann: MANAGE on scorer "judge" (', 'grants of user ann: EDIT on registered_model "bad\\u0007" ('])
      expect(left).toContain(line);
  });

  it('refuses a database that is not basic-auth\'s, and a URI it cannot open', async () => {
    await expect(plan(database('other.db', 'CREATE TABLE t (x INTEGER);'))).rejects.toThrow(/not an MLflow basic-auth database/);
    await expect(openSourceDatabase(`sqlite:///${join(dir, 'missing.db')}`)).rejects.toThrow(/no database file/);
    await expect(openSourceDatabase('mysql://u:secret@h/db')).rejects.toThrow(/neither sqlite/);
    await expect(openSourceDatabase('mysql://u:secret@h/db')).rejects.not.toThrow(/secret/);
  });
});
