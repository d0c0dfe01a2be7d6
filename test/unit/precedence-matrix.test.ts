import { beforeAll, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createEvaluator } from '../../src/authz/evaluate.js';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import type { CachedMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { createPatternGrantsRepo } from '../../src/authz/pattern-grants-repo.js';
import { createPatternWriter } from '../../src/authz/pattern-writer.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import type { Need, Permission, ResourceKind } from '../../src/authz/types.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Principal } from '../../src/principals/types.js';
import { openSqliteStore } from '../../src/store/database.js';

/* docs/security-model.md "Which grant decides", case by case, for kinds with and without USE. */

const sql = openSqliteStore(':memory:');
const dir = createDirectory(sql);
const grants = createGrantsRepo(sql);
const patterns = createPatternGrantsRepo(sql);
const audit = createAuditLog(sql);
const policy = createPolicyReader(grants, patterns);
const writer = createPatternWriter({ sql, patterns, audit, patternsChanged: () => policy.reloadPatterns() });
const evaluator = (defaultPermission: Permission) =>
  createEvaluator({
    policy,
    defaultPermission,
    createRequiresAdmin: false,
    jobStarters: { ownerOf: async () => undefined },
    resolve: async () => [],
    resolveExisting: async () => [],
    lookups: { knownExperimentName: () => undefined, experimentNameById: async () => 'x' } as unknown as CachedMlflowLookups,
  });

let user = 0;
const groups: number[] = [];
let n = 0;
async function caseOf(kind: ResourceKind, setup: { direct?: Permission; groups?: Permission[]; pDirect?: Permission; pGroups?: Permission[] }) {
  const id = `case-${++n}`;
  const u = await dir.createUser({ username: `u${n}`, displayName: 'u', isAdmin: false, isServiceAccount: false });
  user = u.id;
  const gids: number[] = [];
  for (const [i, p] of (setup.groups ?? []).entries()) {
    const g = await dir.createGroup(`g${n}-${i}`);
    gids.push(g.id);
    await grants.insert({ type: 'group', id: g.id }, kind, id, p);
  }
  for (const [i, p] of (setup.pGroups ?? []).entries()) {
    const g = await dir.createGroup(`pg${n}-${i}`);
    gids.push(g.id);
    await writer.set('admin', { grantee: { type: 'group', id: g.id }, name: `pg${n}-${i}` }, kind, `${id}*`, p);
  }
  if (setup.direct) await grants.insert({ type: 'user', id: user }, kind, id, setup.direct);
  if (setup.pDirect) await writer.set('admin', { grantee: { type: 'user', id: user }, name: `u${n}` }, kind, `${id}*`, setup.pDirect);
  await policy.changed([{ kind, id }]);
  groups.splice(0, groups.length, ...gids);
  const principal = { userId: user, username: `u${n}`, groupIds: gids, isAdmin: false } as unknown as Principal;
  return async (need: Need, dflt: Permission = 'NO_PERMISSIONS') => {
    const v = await evaluator(dflt).main(principal, { method: 'GET', pattern: '/x', need, resource: kind, id: { kind: 'none' } } as never, [{ kind, id }]);
    return `${v.allow}:${v.reason}`;
  };
}

beforeAll(async () => {
  await policy.reloadAll();
});

describe('precedence', () => {
  it('several groups: a NO_PERMISSIONS in any denies, else the strongest', async () => {
    const a = await caseOf('registered_model', { groups: ['READ', 'MANAGE', 'EDIT'] });
    expect(await a('manage')).toBe('true:group-grant');
    const b = await caseOf('registered_model', { groups: ['MANAGE', 'NO_PERMISSIONS'] });
    expect(await b('read')).toBe('false:group-deny');
  });
  it("a direct grant outranks the groups' deny and their stronger grants", async () => {
    expect(await (await caseOf('experiment', { direct: 'READ', groups: ['NO_PERMISSIONS'] }))('read')).toBe('true:direct-grant');
    expect(await (await caseOf('experiment', { direct: 'READ', groups: ['MANAGE'] }))('edit')).toBe('false:direct-grant');
  });
  it('any grant on the resource outranks every pattern grant', async () => {
    expect(await (await caseOf('registered_model', { groups: ['NO_PERMISSIONS'], pDirect: 'READ' }))('read')).toBe('false:group-deny');
    expect(await (await caseOf('registered_model', { groups: ['READ'], pDirect: 'MANAGE' }))('edit')).toBe('false:group-grant');
    expect(await (await caseOf('prompt', { direct: 'READ', pGroups: ['MANAGE'] }))('edit')).toBe('false:direct-grant');
  });
  it('pattern grants: own first, then a group deny, then the strongest group', async () => {
    expect(await (await caseOf('prompt', { pDirect: 'READ', pGroups: ['MANAGE'] }))('edit')).toBe('false:pattern-grant');
    expect(await (await caseOf('prompt', { pGroups: ['EDIT', 'NO_PERMISSIONS'] }))('read')).toBe('false:group-pattern-deny');
    expect(await (await caseOf('prompt', { pGroups: ['EDIT', 'READ'] }))('edit')).toBe('true:group-pattern-grant');
  });
  it('the default permission only with no grant of any kind', async () => {
    expect(await (await caseOf('skill', {}))('read', 'READ')).toBe('true:default-permission');
    expect(await (await caseOf('skill', { pGroups: ['NO_PERMISSIONS'] }))('read', 'MANAGE')).toBe('false:group-pattern-deny');
  });
  it('USE sits between READ and EDIT on the gateway kinds', async () => {
    expect(await (await caseOf('gateway_endpoint', { groups: ['READ'] }))('use')).toBe('false:group-grant');
    const u = await caseOf('gateway_endpoint', { groups: ['USE'] });
    expect(await u('use')).toBe('true:group-grant');
    expect(await u('read')).toBe('true:group-grant');
    expect(await u('edit')).toBe('false:group-grant');
    expect(await (await caseOf('gateway_secret', { direct: 'READ', groups: ['MANAGE'] }))('use')).toBe('false:direct-grant');
  });
});
