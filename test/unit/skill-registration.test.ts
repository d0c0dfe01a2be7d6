import { beforeAll, describe, expect, it } from 'vitest';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { createEvaluator } from '../../src/authz/evaluate.js';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import type { CachedMlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import { createResourceResolver, type ResolveRequest } from '../../src/authz/resolve.js';
import type { RouteEntry } from '../../src/authz/types.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Principal } from '../../src/principals/types.js';
import { openSqliteStore } from '../../src/store/database.js';

/*
 * A Skill's registration makes the Skill when MLflow has none (MLflow 3.18): decided as a create for
 * the Skills that are missing, and as EDIT on the ones that exist, with the real catalog rows, resolver
 * and policy; MLflow's answer to "does the Skill exist?" is stubbed.
 */
const sql = openSqliteStore(':memory:');
const grants = createGrantsRepo(sql);
const policy = createPolicyReader(grants);
const existing = new Set(['kept', '@acme/kept']);
const asked: string[] = [];
const lookups = {
  skillExists: async (id: string) => {
    asked.push(id);
    return existing.has(id);
  },
} as unknown as CachedMlflowLookups;
const resolve = createResourceResolver(lookups);
const evaluatorFor = (createRequiresAdmin: boolean) =>
  createEvaluator({ policy, defaultPermission: 'NO_PERMISSIONS', createRequiresAdmin, resolve, resolveExisting: async () => [], lookups, jobStarters: { ownerOf: async () => undefined } } as Parameters<
    typeof createEvaluator
  >[0]);

const row = (method: string, pattern: string): RouteEntry => ROUTE_CATALOG.find((r) => r.method === method && r.pattern === pattern)!;
const REGISTER = row('POST', '/api/3.0/mlflow/skills/:name/versions');
const REGISTER_IN_ORG = row('POST', '/api/3.0/mlflow/skills/@:organization/:name/versions');
const BULK = row('POST', '/api/3.0/mlflow/skills/bulk-register');
const at = (params: Record<string, string>, body?: unknown): ResolveRequest => ({ method: 'POST', query: new URLSearchParams(), params, body, headers: {} });
let editor: Principal;

async function verdict(entry: RouteEntry, req: ResolveRequest, createRequiresAdmin = false) {
  const refs = await resolve(entry, req);
  return evaluatorFor(createRequiresAdmin).evaluate({ principal: editor, entry, request: req, refs });
}

beforeAll(async () => {
  const user = await createDirectory(sql).createUser({ username: 'ed', displayName: 'Ed', isAdmin: false, isServiceAccount: false });
  editor = { userId: user.id, username: 'ed', groupIds: [], isAdmin: false } as unknown as Principal;
  await grants.insert({ type: 'user', id: editor.userId }, 'skill', '@acme/kept', 'EDIT');
  await policy.reloadAll();
});

describe('registering Skill versions', () => {
  it('into a Skill that exists needs EDIT on it; one that does not is a create', async () => {
    expect(await verdict(REGISTER_IN_ORG, at({ organization: 'acme', name: 'kept' }))).toMatchObject({ allow: true, reason: 'direct-grant' });
    expect(await verdict(REGISTER, at({ name: 'kept' }))).toMatchObject({ allow: false, reason: 'default-permission' });
    expect(await verdict(REGISTER, at({ name: 'fresh' }))).toMatchObject({ allow: true, reason: 'create-open' });
    const refused = await verdict(REGISTER, at({ name: 'fresh' }), true);
    expect(refused).toMatchObject({ allow: false, reason: 'create-admin-only' });
    expect(refused.message).toBe("Permission denied: ed may not create on skill 'fresh'");
    // Asked of MLflow each time, by the id the path names.
    expect(asked).toEqual(['@acme/kept', 'kept', 'fresh', 'fresh']);
  });

  it('in bulk: every existing Skill needs EDIT, and any missing one the right to create', async () => {
    const body = (organization: string, ...names: string[]) => ({ organization, skills: names.map((name) => ({ name, source: 's', digest: 'd' })) });
    expect(await verdict(BULK, at({}, body('acme', 'kept', 'new-one')))).toMatchObject({ allow: true, reason: 'direct-grant' });
    expect(await verdict(BULK, at({}, body('acme', 'kept', 'new-one')), true)).toMatchObject({ allow: false, reason: 'create-admin-only' });
    expect(await verdict(BULK, at({}, body('', 'kept', 'new-one')))).toMatchObject({ allow: false, reason: 'default-permission' });
    expect(await verdict(BULK, at({}, body('', 'new-one', 'new-two')))).toMatchObject({ allow: true, reason: 'create-open' });
    const refs = await resolve(BULK, at({}, body('acme', 'kept', 'new-one', 'kept')));
    expect(refs).toEqual([
      { kind: 'skill', id: '@acme/kept' },
      { kind: 'skill', id: '@acme/new-one', missing: true },
    ]);
  });

  it('refuses a body or path naming no Skill MLflow could have, before asking MLflow', async () => {
    const before = asked.length;
    for (const req of [
      at({ name: 'Kept' }),
      at({ organization: '', name: 'kept' }),
      at({ organization: 'ACME', name: 'kept' }),
    ])
      await expect(Promise.resolve().then(() => resolve(REGISTER_IN_ORG, req))).rejects.toMatchObject({ status: 400 });
    for (const bad of [{}, { skills: [] }, { skills: 'kept' }, { organization: 7, skills: [{ name: 'kept' }] }, { skills: [{ name: 'UPPER' }] }, { skills: [{}] }])
      await expect(Promise.resolve().then(() => resolve(BULK, at({}, bad)))).rejects.toMatchObject({ status: 400 });
    expect(asked.length).toBe(before);
  });
});
