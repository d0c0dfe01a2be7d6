import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createGrantWriter } from '../../src/authz/grant-writer.js';
import { createGrantsRepo, type GrantsRepo } from '../../src/authz/grants-repo.js';
import { createPatternGrantsRepo, type PatternGrantsRepo } from '../../src/authz/pattern-grants-repo.js';
import { createPolicyReader, type PolicyReader } from '../../src/authz/policy.js';
import type { ResourceKind } from '../../src/authz/types.js';
import type { Sql } from '../../src/store/sql.js';
import { inWorkspace } from '../../src/workspaces/request-workspace.js';
import { freshStore } from '../helpers/test-store.js';

/**
 * `GrantWriter.dropWorkspace`, on whichever engine the suite runs on (SQLite, or PostgreSQL with
 * FLOWGATE_TEST_STORE=postgres): a deleted workspace takes its membership, the grants kept in it and the
 * pattern grants made in it, in one transaction with one audit entry, and nothing of `ws-2` (whose name
 * starts with `ws`) nor of the default workspace (whose ids are stored as they are, or as
 * `default<separator>…`); the policy index follows.
 */
const SEP = '\u001f';
const ann = { type: 'user', id: 1 } as const;
const bob = { type: 'user', id: 2 } as const;
const team = { type: 'group', id: 1 } as const;
const annFacts = { userId: 1, groupIds: [] as number[] };
const teamFacts = { userId: 3, groupIds: [1] };

let sql: Sql;
let close: () => Promise<void>;
let grants: GrantsRepo;
let patterns: PatternGrantsRepo;
let policy: PolicyReader;
let writer: ReturnType<typeof createGrantWriter>;

const rows = async () =>
  (await sql.all<{ resource_kind: string; resource_id: string; user_id: number | null; group_id: number | null; permission: string }>(
    'SELECT resource_kind, resource_id, user_id, group_id, permission FROM grants',
  ))
    .map((r) => `${r.resource_kind} ${r.resource_id.replaceAll(SEP, '|')} ${r.user_id === null ? `g${r.group_id}` : `u${r.user_id}`} ${r.permission}`)
    .sort();
const patternRows = async () =>
  (await sql.all<{ resource_kind: string; pattern: string }>('SELECT resource_kind, pattern FROM pattern_grants')).map((r) => `${r.resource_kind} ${r.pattern.replaceAll(SEP, '|')}`).sort();
const audits = async () => sql.all<{ actor: string; action: string; target: string; old_value: string | null }>('SELECT actor, action, target, old_value FROM audit_log ORDER BY id');
const direct = (ws: string, kind: ResourceKind, id: string, who = annFacts) => inWorkspace(ws, () => policy.factsFor(who, { kind, id } as never).direct);

beforeEach(async () => {
  ({ sql, close } = await freshStore());
  await sql.run("INSERT INTO users (username, display_name, created_at) VALUES ('ann', 'Ann', 0), ('bob', 'Bob', 0), ('cy', 'Cy', 0)");
  await sql.run("INSERT INTO groups (name, created_at) VALUES ('team', 0)");
  grants = createGrantsRepo(sql);
  patterns = createPatternGrantsRepo(sql);
  policy = createPolicyReader(grants, patterns);
  writer = createGrantWriter({ sql, grants, audit: createAuditLog(sql), grantsChanged: (refs) => policy.changed(refs), patterns, patternsChanged: () => policy.reloadPatterns() });

  // Membership: ws (ann a member, team its administrators), ws-2 (ann and bob), default (ann).
  await grants.insert(ann, 'workspace', 'ws', 'USE');
  await grants.insert(team, 'workspace', 'ws', 'MANAGE');
  await grants.insert(ann, 'workspace', 'ws-2', 'USE');
  await grants.insert(bob, 'workspace', 'ws-2', 'MANAGE');
  await grants.insert(ann, 'workspace', 'default', 'USE');
  // The same names in each workspace, and default-workspace names that look like ws's keys.
  for (const ws of ['ws', 'ws-2', 'default'])
    await inWorkspace(ws, async () => {
      await grants.insert(ann, 'experiment', '1', 'READ');
      await grants.insert(bob, 'registered_model', 'm', 'EDIT');
      await grants.insert(team, 'prompt', 'p', 'MANAGE');
      await patterns.upsert(ann, 'registered_model', 'm*', 'MANAGE');
    });
  await grants.insert(ann, 'registered_model', `ws${SEP}m`, 'MANAGE'); // stored as default|ws|m
  await grants.insert(ann, 'registered_model', 'ws', 'READ');
  await grants.insert(ann, 'registered_model', 'ws-', 'READ');
  // A pattern on the workspace kind names workspaces to come, not this one.
  await patterns.upsert(ann, 'workspace', 'w*', 'USE');
  await policy.reloadAll();
});
afterEach(async () => {
  await close();
});

describe('dropping a deleted workspace’s grants', () => {
  it('removes its membership, the grants kept in it and its pattern grants, in one audited change; ws-2 and default keep theirs', async () => {
    const before = await rows();
    expect(direct('ws', 'experiment', '1')).toBe('READ');
    expect(direct('ws', 'registered_model', 'mx')).toBe('MANAGE'); // by the pattern
    expect(direct('default', 'workspace', 'ws', teamFacts)).toBeUndefined();
    expect(inWorkspace('default', () => policy.factsFor(teamFacts, { kind: 'workspace', id: 'ws' }).groups)).toEqual(['MANAGE']);

    expect(await writer.dropWorkspace('admin', 'ws')).toEqual({ members: 2, grants: 3, pattern_grants: 1 });

    expect(await rows()).toEqual(before.filter((r) => !r.startsWith('workspace ws ') && !/^\w+ ws\|/.test(r)));
    expect(await rows()).toEqual([
      'experiment 1 u1 READ',
      'experiment ws-2|1 u1 READ',
      'prompt p g1 MANAGE',
      'prompt ws-2|p g1 MANAGE',
      'registered_model default|ws|m u1 MANAGE',
      'registered_model m u2 EDIT',
      'registered_model ws u1 READ',
      'registered_model ws- u1 READ',
      'registered_model ws-2|m u2 EDIT',
      'workspace default u1 USE',
      'workspace ws-2 u1 USE',
      'workspace ws-2 u2 MANAGE',
    ]);
    expect(await patternRows()).toEqual(['registered_model m*', 'registered_model ws-2|m*', 'workspace w*']);
    const entries = await audits();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toMatchObject({ actor: 'admin', action: 'grant.drop-with-workspace', target: 'workspace:ws' });
    expect(JSON.parse(entries[0]!.old_value!)).toEqual({ members: 2, grants: 3, pattern_grants: 1 });

    // The policy index followed, whatever workspace the caller acted in.
    expect(inWorkspace('default', () => policy.factsFor(teamFacts, { kind: 'workspace', id: 'ws' }).groups)).toEqual([]);
    expect(inWorkspace('default', () => policy.ownGrants(annFacts, { kind: 'workspace', id: 'ws' }).direct)).toBeUndefined();
    // Her pattern on the workspace kind (`w*`) names workspaces, not this one: it stays, and still matches.
    expect(direct('default', 'workspace', 'ws')).toBe('USE');
    expect(direct('ws', 'experiment', '1')).toBeUndefined();
    expect(direct('ws', 'registered_model', 'm', { userId: 2, groupIds: [] })).toBeUndefined();
    expect(direct('ws', 'registered_model', 'mx')).toBeUndefined();
    expect(direct('ws-2', 'experiment', '1')).toBe('READ');
    expect(direct('ws-2', 'registered_model', 'mx')).toBe('MANAGE');
    expect(direct('ws-2', 'workspace', 'ws-2')).toBe('USE');
    expect(direct('default', 'experiment', '1')).toBe('READ');
    expect(direct('default', 'registered_model', 'mx')).toBe('MANAGE');
    expect(direct('default', 'registered_model', `ws${SEP}m`)).toBe('MANAGE');

    // Again: nothing left to drop, and no second entry.
    expect(await writer.dropWorkspace('admin', 'ws')).toEqual({ members: 0, grants: 0, pattern_grants: 0 });
    expect(await audits()).toHaveLength(1);
  });

  it('refuses the default workspace and a name MLflow would refuse, changing nothing', async () => {
    const before = await rows();
    for (const name of ['default', 'WS', '', `ws${SEP}`, 'ws%', '-ws'])
      await expect(writer.dropWorkspace('admin', name), JSON.stringify(name)).rejects.toThrow(/not a workspace/);
    expect(await rows()).toEqual(before);
    expect(await patternRows()).toHaveLength(4);
    expect(await audits()).toEqual([]);
  });

  it('is one transaction: a failure part-way leaves every grant where it was', async () => {
    const before = await rows();
    const failing = createGrantWriter({
      sql,
      grants,
      audit: createAuditLog(sql),
      grantsChanged: async () => undefined,
      patterns: { deleteIn: async () => Promise.reject(new Error('store went away')) },
    });
    await expect(failing.dropWorkspace('admin', 'ws')).rejects.toThrow('store went away');
    expect(await rows()).toEqual(before);
    expect(await audits()).toEqual([]);
  });

  it('takes a workspace holding more grants than a call takes arguments (150k) in one change, the index following', async () => {
    await sql.run(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 150000)
       INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at)
       SELECT 'experiment', CAST(? AS TEXT) || CAST(i + 100 AS TEXT), 1, 'EDIT', 0, 0 FROM n`,
      [`ws${SEP}`],
    );
    await policy.reloadAll();
    expect(direct('ws', 'experiment', '150100')).toBe('EDIT');
    await writer.dropWorkspace('admin', 'ws');
    expect(direct('ws', 'experiment', '150100')).toBeUndefined();
    expect(direct('ws-2', 'experiment', '1')).toBe('READ');
  }, 120_000);
});
