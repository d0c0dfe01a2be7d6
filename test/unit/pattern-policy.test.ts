import { beforeAll, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { createEvaluator } from '../../src/authz/evaluate.js';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import type { CachedMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { createPatternGrantsRepo } from '../../src/authz/pattern-grants-repo.js';
import { createPatternWriter } from '../../src/authz/pattern-writer.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import type { ResourceRef, RouteEntry } from '../../src/authz/types.js';
import { FlowgateError } from '../../src/errors.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Principal } from '../../src/principals/types.js';
import { openSqliteStore } from '../../src/store/database.js';

const sql = openSqliteStore(':memory:');
const dir = createDirectory(sql);
const grants = createGrantsRepo(sql);
const patterns = createPatternGrantsRepo(sql);
const audit = createAuditLog(sql);
const policy = createPolicyReader(grants, patterns);
const writer = createPatternWriter({ sql, patterns, audit, patternsChanged: () => policy.reloadPatterns() });

let alice: Principal;
let bob: Principal;
let teamA = 0;

/** MLflow's experiments by id; `asked` counts the name look-ups that reached "MLflow". */
const names: Record<string, string> = { '1': 'team-a/one', '2': 'team-b/x', '3': 'team-a/secret' };
let asked = 0;
let failing = false;
const cached = new Map<string, string>();
const lookups = {
  experimentNameById: async (id: string) => {
    asked++;
    if (failing) throw new FlowgateError('TEMPORARILY_UNAVAILABLE', `Could not look up experiment ${id}: the tracking server did not answer`);
    const name = names[id]!;
    cached.set(id, name);
    return name;
  },
  knownExperimentName: (id: string) => cached.get(id),
} as unknown as CachedMlflowLookups;

const evaluator = createEvaluator({
  policy,
  defaultPermission: 'NO_PERMISSIONS',
  createRequiresAdmin: false,
  jobStarters: { ownerOf: async () => undefined },
  resolve: async () => [],
  resolveExisting: async () => [],
  lookups,
});

const principal = (userId: number, username: string, groupIds: number[] = []): Principal =>
  ({ userId, username, groupIds, isAdmin: false }) as unknown as Principal;
const experiment = (id: string): ResourceRef => ({ kind: 'experiment', id });
const read = { method: 'GET', pattern: '/api/2.0/mlflow/experiments/get', need: 'read', resource: 'experiment', id: { kind: 'none' } } as unknown as RouteEntry;
const edit = { ...read, need: 'edit' } as RouteEntry;

beforeAll(async () => {
  const a = await dir.createUser({ username: 'alice', displayName: 'a', isAdmin: false, isServiceAccount: false });
  const b = await dir.createUser({ username: 'bob', displayName: 'b', isAdmin: false, isServiceAccount: false });
  const g = await dir.createGroup('team-a');
  teamA = g.id;
  alice = principal(a.id, 'alice', [g.id]);
  bob = principal(b.id, 'bob');
  await policy.reloadAll();
  await writer.set('admin', { grantee: { type: 'group', id: g.id }, name: 'team-a' }, 'experiment', 'team-a/*', 'READ');
  await writer.set('admin', { grantee: { type: 'user', id: a.id }, name: 'alice' }, 'registered_model', 'team-a/*', 'EDIT');
  await grants.insert({ type: 'user', id: a.id }, 'experiment', '3', 'NO_PERMISSIONS');
  await policy.changed([experiment('3')]);
});

describe('pattern grants in the policy and the evaluator', () => {
  it('a caller without experiment patterns is decided synchronously, with no name looked up', () => {
    asked = 0;
    const verdict = evaluator.main(bob, read, [experiment('1')]);
    expect(verdict).not.toBeInstanceOf(Promise);
    expect((verdict as { allow: boolean }).allow).toBe(false);
    expect(asked).toBe(0);
  });

  it("a group's pattern grant gives READ on a matching experiment, found by its looked-up name", async () => {
    cached.clear();
    asked = 0;
    const verdict = evaluator.main(alice, read, [experiment('1')]);
    expect(verdict).toBeInstanceOf(Promise);
    expect(await verdict).toMatchObject({ allow: true, reason: 'group-pattern-grant' });
    expect(asked).toBe(1);
    // The name is now cached: the next decision needs no promise.
    const again = evaluator.main(alice, read, [experiment('1')]);
    expect(again).not.toBeInstanceOf(Promise);
    expect((again as { allow: boolean }).allow).toBe(true);
    expect(await evaluator.main(alice, edit, [experiment('1')])).toMatchObject({ allow: false, reason: 'group-pattern-grant' });
  });

  it('a name outside the pattern gets nothing from it; a direct NO_PERMISSIONS on a matching one still wins', async () => {
    expect(await evaluator.main(alice, read, [experiment('2')])).toMatchObject({ allow: false, reason: 'default-permission' });
    expect(await evaluator.main(alice, read, [experiment('3')])).toMatchObject({ allow: false, reason: 'direct-grant' });
  });

  it('models match by their name, which is their id, with no look-up', () => {
    asked = 0;
    expect(evaluator.decideFor(alice, 'edit', [{ kind: 'registered_model', id: 'team-a/m' }])).toMatchObject({ allow: true, reason: 'pattern-grant' });
    expect(evaluator.decideFor(alice, 'edit', [{ kind: 'registered_model', id: 'team-b/m' }]).allow).toBe(false);
    expect(asked).toBe(0);
  });

  it('fails closed: a look-up that fails refuses the request, and facts without the name are refused too', async () => {
    cached.clear();
    failing = true;
    try {
      await expect(Promise.resolve(evaluator.main(alice, read, [experiment('1')]))).rejects.toMatchObject({ code: 'TEMPORARILY_UNAVAILABLE' });
      expect(() => policy.factsFor(alice, experiment('1'))).toThrow(/name is not known/);
    } finally {
      failing = false;
    }
  });

  it('every further check sees names too (an `also` id on another experiment)', async () => {
    const entry = { ...read, also: [{ id: { kind: 'id', field: 'x', from: 'query' }, need: 'read' }] } as unknown as RouteEntry;
    const withAlso = createEvaluator({
      policy,
      defaultPermission: 'NO_PERMISSIONS',
      createRequiresAdmin: false,
      jobStarters: { ownerOf: async () => undefined },
      resolve: async () => [experiment('2')],
      resolveExisting: async () => [],
      lookups,
    });
    const request = { method: 'GET', query: new URLSearchParams('x=2'), body: undefined, params: {}, headers: {} };
    const verdict = await withAlso.evaluate({ principal: alice, entry, request, refs: [experiment('1')] });
    expect(verdict.allow).toBe(false);
    expect(verdict.checks.at(-1)).toMatchObject({ check: 'also', allow: false });
  });

  it('writes are audited, reload the index, and an unchanged write changes nothing', async () => {
    const who = { grantee: { type: 'group' as const, id: teamA }, name: 'team-a' };
    expect(await writer.set('admin', who, 'experiment', 'team-a/*', 'READ')).toBe('unchanged');
    expect(await writer.set('admin', who, 'experiment', 'team-a/*', 'NO_PERMISSIONS')).toBe('updated');
    expect(await evaluator.main(alice, read, [experiment('1')])).toMatchObject({ allow: false, reason: 'group-pattern-deny' });
    expect(await writer.remove('admin', who, 'experiment', 'team-a/*')).toBe('NO_PERMISSIONS');
    expect(await writer.remove('admin', who, 'experiment', 'team-a/*')).toBeUndefined();
    expect(policy.mayNeedExperimentNames(alice)).toBe(false);
    const actions = (await audit.list(10)).map((e) => `${e.action} ${e.target}`);
    expect(actions).toEqual(
      expect.arrayContaining([
        'pattern.create experiment:team-a/*/group:team-a',
        'pattern.update experiment:team-a/*/group:team-a',
        'pattern.delete experiment:team-a/*/group:team-a',
      ]),
    );
  });
});

describe('whether a kind has pattern grants (a rename needs MANAGE only then)', () => {
  it('is per kind, and follows their removal: models have one here (the experiments one was removed above), prompts never had any', async () => {
    expect(policy.patternGrantsOf('registered_model')).toBe(true);
    expect(policy.patternGrantsOf('experiment')).toBe(false);
    expect(policy.patternGrantsOf('prompt')).toBe(false);
    await writer.set('admin', { grantee: { type: 'group', id: teamA }, name: 'team-a' }, 'experiment', 'x/*', 'READ');
    expect(policy.patternGrantsOf('experiment')).toBe(true);
    await writer.remove('admin', { grantee: { type: 'group', id: teamA }, name: 'team-a' }, 'experiment', 'x/*');
    expect(policy.patternGrantsOf('experiment')).toBe(false);
  });
});
