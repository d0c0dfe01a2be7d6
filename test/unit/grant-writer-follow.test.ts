import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createGrantWriter } from '../../src/authz/grant-writer.js';
import { createGrantsRepo, type Grantee, type GrantsRepo } from '../../src/authz/grants-repo.js';
import type { ResourceRef } from '../../src/authz/types.js';
import { PROMPT, REGISTERED_MODEL } from '../../src/resources/kinds.js';
import type { Sql } from '../../src/store/sql.js';
import { freshStore } from '../helpers/test-store.js';

/**
 * A registered model's (or prompt's) grants follow a rename: grants already on the new name, of
 * either kind, belonged to no model MLflow has (it refuses a name in use) and are pruned first,
 * audited as `grant.prune-stale`, in the move's transaction, never merged into the renamed model's.
 * On whichever engine the suite runs on (SQLite, or PostgreSQL with FLOWGATE_TEST_STORE=postgres).
 */
const alice: Grantee = { type: 'user', id: 1 };
const mallory: Grantee = { type: 'user', id: 2 };
const editors: Grantee = { type: 'group', id: 1 };

let sql: Sql;
let close: () => Promise<void>;
let grants: GrantsRepo;
let told: ResourceRef[];

const writer = (repo: GrantsRepo = grants) =>
  createGrantWriter({ sql, grants: repo, audit: createAuditLog(sql), grantsChanged: async (refs) => void told.push(...refs) });

const audit = async () =>
  (await sql.all<{ action: string; target: string; old_value: string | null }>('SELECT action, target, old_value FROM audit_log ORDER BY id')).map((r) => ({
    action: r.action,
    target: r.target,
    old: r.old_value === null ? null : (JSON.parse(r.old_value) as unknown),
  }));

const on = async (kind: typeof REGISTERED_MODEL | typeof PROMPT, name: string) => {
  const { users, groups } = await grants.onResource(kind, name);
  return [...users.map((u) => `user:${u.name}=${u.permission}`), ...groups.map((g) => `group:${g.name}=${g.permission}`)];
};

beforeEach(async () => {
  ({ sql, close } = await freshStore());
  await sql.run("INSERT INTO users (username, display_name, created_at) VALUES ('alice', 'Alice', 0), ('mallory', 'Mallory', 0)");
  await sql.run("INSERT INTO groups (name, created_at) VALUES ('editors', 0)");
  grants = createGrantsRepo(sql);
  told = [];
});

afterEach(async () => {
  await close();
});

describe('followModel: a rename', () => {
  it("prunes grants held only on the new name, of both kinds, before moving the model's", async () => {
    await grants.insert(alice, REGISTERED_MODEL, 'prod', 'MANAGE');
    await grants.insert(editors, REGISTERED_MODEL, 'prod', 'EDIT');
    await grants.insert(alice, PROMPT, 'prod', 'READ');
    // Mallory's grants on a name MLflow does not have: given ahead of time, or left by a model deleted outside flowgate.
    await grants.insert(mallory, REGISTERED_MODEL, 'prod-v2', 'MANAGE');
    await grants.insert(mallory, PROMPT, 'prod-v2', 'MANAGE');
    await grants.insert(editors, PROMPT, 'prod-v2', 'READ');

    await writer().followModel('mallory', 'prod', 'prod-v2');

    expect(await on(REGISTERED_MODEL, 'prod-v2')).toEqual(['user:alice=MANAGE', 'group:editors=EDIT']);
    expect(await on(PROMPT, 'prod-v2')).toEqual(['user:alice=READ']);
    expect(await grants.get(mallory, REGISTERED_MODEL, 'prod-v2')).toBeUndefined();
    expect(await on(REGISTERED_MODEL, 'prod')).toEqual([]);
    expect(await on(PROMPT, 'prod')).toEqual([]);
    expect(await audit()).toEqual([
      { action: 'grant.prune-stale', target: `${REGISTERED_MODEL}:prod-v2`, old: { grants: 1 } },
      { action: 'grant.prune-stale', target: `${PROMPT}:prod-v2`, old: { grants: 2 } },
      { action: 'grant.move-with-model', target: `${REGISTERED_MODEL}:prod`, old: { grants: 3 } },
    ]);
    expect(told).toEqual(
      expect.arrayContaining([
        { kind: REGISTERED_MODEL, id: 'prod' },
        { kind: PROMPT, id: 'prod' },
        { kind: REGISTERED_MODEL, id: 'prod-v2' },
        { kind: PROMPT, id: 'prod-v2' },
      ]),
    );
  });

  it('a grantee holding grants on both names keeps the one of the model that moved', async () => {
    await grants.insert(alice, REGISTERED_MODEL, 'prod', 'READ');
    await grants.insert(alice, REGISTERED_MODEL, 'prod-v2', 'MANAGE');
    await writer().followModel('admin', 'prod', 'prod-v2');
    expect(await on(REGISTERED_MODEL, 'prod-v2')).toEqual(['user:alice=READ']);
  });

  it('audits no prune when the new name holds no grant', async () => {
    await grants.insert(alice, REGISTERED_MODEL, 'prod', 'READ');
    await writer().followModel('admin', 'prod', 'prod-v2');
    expect((await audit()).map((a) => a.action)).toEqual(['grant.move-with-model']);
  });

  it('prunes stale grants on the new name even when the renamed model has none', async () => {
    await grants.insert(mallory, REGISTERED_MODEL, 'prod-v2', 'MANAGE');
    await writer().followModel('mallory', 'prod', 'prod-v2');
    expect(await on(REGISTERED_MODEL, 'prod-v2')).toEqual([]);
    expect((await audit()).map((a) => a.action)).toEqual(['grant.prune-stale']);
  });

  it('to the name it has changes nothing', async () => {
    await grants.insert(alice, REGISTERED_MODEL, 'prod', 'MANAGE');
    await grants.insert(editors, REGISTERED_MODEL, 'prod', 'EDIT');
    await writer().followModel('mallory', 'prod', 'prod');
    expect(await on(REGISTERED_MODEL, 'prod')).toEqual(['user:alice=MANAGE', 'group:editors=EDIT']);
    expect(await audit()).toEqual([]);
  });

  it('prunes in the move\'s transaction: a move that fails keeps the grants on both names', async () => {
    await grants.insert(alice, REGISTERED_MODEL, 'prod', 'MANAGE');
    await grants.insert(mallory, REGISTERED_MODEL, 'prod-v2', 'MANAGE');
    const failing: GrantsRepo = {
      ...grants,
      moveResource: async () => {
        throw new Error('store fault');
      },
    };
    await expect(writer(failing).followModel('mallory', 'prod', 'prod-v2')).rejects.toThrow('store fault');
    expect(await on(REGISTERED_MODEL, 'prod')).toEqual(['user:alice=MANAGE']);
    expect(await on(REGISTERED_MODEL, 'prod-v2')).toEqual(['user:mallory=MANAGE']);
    expect(await audit()).toEqual([]);
  });
});

describe('followModel: a delete', () => {
  it("drops the model's grants of both kinds and nothing else", async () => {
    await grants.insert(alice, REGISTERED_MODEL, 'prod', 'MANAGE');
    await grants.insert(alice, PROMPT, 'prod', 'READ');
    await grants.insert(mallory, REGISTERED_MODEL, 'prod-v2', 'MANAGE');
    await writer().followModel('admin', 'prod', undefined);
    expect(await on(REGISTERED_MODEL, 'prod')).toEqual([]);
    expect(await on(PROMPT, 'prod')).toEqual([]);
    expect(await on(REGISTERED_MODEL, 'prod-v2')).toEqual(['user:mallory=MANAGE']);
    expect(await audit()).toEqual([{ action: 'grant.drop-with-model', target: `${REGISTERED_MODEL}:prod`, old: { grants: 2 } }]);
  });
});
