import { beforeAll, describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.js';
import { ROUTE_CATALOG } from '../../src/authz/catalog.js';
import { createEvaluator } from '../../src/authz/evaluate.js';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import type { CachedMlflowLookups, MlflowLookups } from '../../src/authz/mlflow-lookups.js';
import { createPatternGrantsRepo } from '../../src/authz/pattern-grants-repo.js';
import { createPatternWriter } from '../../src/authz/pattern-writer.js';
import { createPolicyReader } from '../../src/authz/policy.js';
import { createResourceResolver, type ResolveRequest } from '../../src/authz/resolve.js';
import type { Permission, ResourceKind, RouteEntry } from '../../src/authz/types.js';
import { createDirectory } from '../../src/principals/directory.js';
import type { Principal } from '../../src/principals/types.js';
import { openSqliteStore } from '../../src/store/database.js';

/*
 * Class 3: setting or removing the prompt flag moves a registered model between model and prompt
 * grants, so it needs MANAGE on both, on every route and spelling that can do it. Decided with the
 * real catalog rows, resolver and policy; MLflow's answer to "is it a prompt?" is stubbed.
 */
const sql = openSqliteStore(':memory:');
const dir = createDirectory(sql);
const grants = createGrantsRepo(sql);
const patterns = createPatternGrantsRepo(sql);
const policy = createPolicyReader(grants, patterns);
const writer = createPatternWriter({ sql, patterns, audit: createAuditLog(sql), patternsChanged: () => policy.reloadPatterns() });

const prompts = new Set(['p-x']);
const lookups = { isPrompt: async (name: string) => prompts.has(name) } as unknown as MlflowLookups & CachedMlflowLookups;
const resolve = createResourceResolver(lookups);
const evaluator = createEvaluator({ policy, defaultPermission: 'NO_PERMISSIONS', createRequiresAdmin: false, resolve, resolveExisting: async () => [], lookups, jobStarters: { ownerOf: async () => undefined } });

const FLAG = 'mlflow.prompt.is_prompt';
const row = (method: string, pattern: string): RouteEntry => {
  const found = ROUTE_CATALOG.find((r) => r.method === method && r.pattern === pattern);
  if (!found) throw new Error(`no row ${method} ${pattern}`);
  return found;
};
const SET_TAG = ['/api/2.0/mlflow/registered-models/set-tag', '/ajax-api/2.0/mlflow/registered-models/set-tag'].map((p) => row('POST', p));
const DELETE_TAG = ['/api/2.0/mlflow/registered-models/delete-tag', '/ajax-api/2.0/mlflow/registered-models/delete-tag'].map((p) => row('DELETE', p));

const request = (method: string, body: unknown, query = ''): ResolveRequest => ({ method, query: new URLSearchParams(query), body, params: {}, headers: {} });

let editorDirect: Principal;
let editorByGroup: Principal;
let editorByPattern: Principal;
let owner: Principal;
let promptManager: Principal;
const principal = (userId: number, username: string, groupIds: number[] = []) => ({ userId, username, groupIds, isAdmin: false }) as unknown as Principal;

async function grant(userId: number | undefined, groupId: number | undefined, kind: ResourceKind, id: string, permission: Permission) {
  await grants.insert(userId !== undefined ? { type: 'user', id: userId } : { type: 'group', id: groupId! }, kind, id, permission);
  await policy.changed([{ kind, id }]);
}

async function verdictFor(who: Principal, entry: RouteEntry, req: ResolveRequest) {
  const refs = await resolve(entry, req);
  return evaluator.evaluate({ principal: who, entry, request: req, refs });
}

beforeAll(async () => {
  const make = (username: string) => dir.createUser({ username, displayName: username, isAdmin: false, isServiceAccount: false });
  const [a, b, c, d, e] = [await make('direct'), await make('grouped'), await make('patterned'), await make('owner'), await make('prompt-manager')];
  const group = await dir.createGroup('editors');
  await policy.reloadAll();
  editorDirect = principal(a.id, 'direct');
  editorByGroup = principal(b.id, 'grouped', [group.id]);
  editorByPattern = principal(c.id, 'patterned');
  owner = principal(d.id, 'owner');
  promptManager = principal(e.id, 'prompt-manager');
  // EDIT on the model m-x and on the prompt p-x, held three ways; MANAGE on the other side by a pattern.
  await grant(a.id, undefined, 'registered_model', 'm-x', 'EDIT');
  await grant(a.id, undefined, 'prompt', 'p-x', 'EDIT');
  await grant(undefined, group.id, 'registered_model', 'm-x', 'EDIT');
  await grant(undefined, group.id, 'prompt', 'p-x', 'EDIT');
  for (const [who, name] of [
    [{ type: 'user' as const, id: a.id }, 'direct'],
    [{ type: 'user' as const, id: b.id }, 'grouped'],
    [{ type: 'user' as const, id: c.id }, 'patterned'],
  ] as const) {
    await writer.set('admin', { grantee: who, name }, 'prompt', 'm-*', 'MANAGE');
    await writer.set('admin', { grantee: who, name }, 'registered_model', 'p-*', 'MANAGE');
  }
  await writer.set('admin', { grantee: { type: 'user', id: c.id }, name: 'patterned' }, 'registered_model', 'm-*', 'EDIT');
  await writer.set('admin', { grantee: { type: 'user', id: c.id }, name: 'patterned' }, 'prompt', 'p-*', 'EDIT');
  // The owner manages both sides of m-x.
  await grant(d.id, undefined, 'registered_model', 'm-x', 'MANAGE');
  await grant(d.id, undefined, 'prompt', 'm-x', 'MANAGE');
  // Manages the prompt p-x, holds nothing on the model of that name.
  await grant(e.id, undefined, 'prompt', 'p-x', 'MANAGE');
});

describe('the prompt flag needs MANAGE on the model and on the prompt (class 3)', () => {
  const editors = () => [editorDirect, editorByGroup, editorByPattern];

  it.each(SET_TAG.map((e) => [e.pattern, e] as const))('%s: EDIT plus a MANAGE pattern on the other side is refused, either way', async (_p, entry) => {
    for (const who of editors())
      for (const body of [
        { name: 'm-x', key: FLAG, value: 'true' },
        { name: 'p-x', key: FLAG, value: 'false' },
        // Double-encoded, as old clients send it; and spellings a case-insensitive, space-padding database reads as the flag.
        JSON.stringify({ name: 'm-x', key: FLAG, value: 'TRUE' }),
        { name: 'm-x', key: 'MLFLOW.PROMPT.IS_PROMPT', value: 'true' },
        { name: 'p-x', key: `${FLAG} `, value: 'false' },
      ]) {
        const verdict = await verdictFor(who, entry, request('POST', body));
        expect(verdict, `${who.username} ${JSON.stringify(body)}`).toMatchObject({ allow: false });
        expect(verdict.checks.at(-1)?.check).toBe('kind');
        expect(verdict.message).toContain('moves it between model and prompt grants');
      }
  });

  it.each(DELETE_TAG.map((e) => [e.pattern, e] as const))('%s: removing the flag (any spelling) needs MANAGE on the model side too', async (_p, entry) => {
    for (const who of [...editors(), promptManager]) {
      for (const req of [
        request('DELETE', { name: 'p-x', key: FLAG }),
        request('DELETE', { name: 'p-x', key: FLAG.toUpperCase() }),
        request('DELETE', { name: 'p-x', key: `${FLAG} ` }),
      ]) {
        const verdict = await verdictFor(who, entry, req);
        expect(verdict.allow, `${who.username} ${JSON.stringify(req.body)}`).toBe(false);
      }
      // MLflow reads a DELETE's JSON body only: the flag named in the query alone is refused outright.
      await expect(verdictFor(who, entry, request('DELETE', undefined, `name=p-x&key=${FLAG}`))).rejects.toMatchObject({ status: 400 });
    }
    // Any other tag: MANAGE on the prompt is enough.
    expect((await verdictFor(promptManager, entry, request('DELETE', { name: 'p-x', key: 'team' }))).allow).toBe(true);
  });

  it('other tags still need EDIT only; MANAGE on both sides may change the flag', async () => {
    for (const who of editors()) expect((await verdictFor(who, SET_TAG[0]!, request('POST', { name: 'm-x', key: 'team', value: 'a' }))).allow).toBe(true);
    const verdict = await verdictFor(owner, SET_TAG[1]!, request('POST', { name: 'm-x', key: FLAG, value: 'true' }));
    expect(verdict).toMatchObject({ allow: true });
    expect(verdict.checks.map((c) => c.check)).toEqual(['main', 'kind']);
  });
});
