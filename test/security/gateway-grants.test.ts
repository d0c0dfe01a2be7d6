import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ok, type Caller } from './harness/http.js';
import { startStack, type Stack } from './harness/stack.js';
import { randomHex, V2 } from './harness/world.js';

/*
 * The admin API's grants on the AI gateway's resources (secrets, model definitions, endpoints, keyed
 * by name under `permissions/…/gateways/<kind>/<name>`), attacked in front of the real MLflow: a
 * manager of one endpoint reaching for another (by name, by another gateway kind of the same name,
 * by path tricks, through a batch or a pattern), a holder of USE granting, and USE where no kind of
 * MLflow's takes it. Every refusal changes nothing: the grants and the audit log stay as they were.
 */
const tag = randomHex(3);
const mine = `team-chat-${tag}`;
const other = `other-chat-${tag}`;
const PREFIXES = ['/api/2.0/mlflow', '/ajax-api/2.0/mlflow'] as const;
const KINDS = ['secrets', 'model-definitions', 'endpoints'] as const;

let stack: Stack;
let admin: Caller;
const as = (user: string) => stack.through(user);
const state = async () => ({
  grants: await stack.fg.store.sql.all('SELECT resource_kind, resource_id, user_id, group_id, permission FROM grants ORDER BY resource_kind, resource_id, user_id, group_id'),
  audit: ((await stack.fg.store.sql.get('SELECT count(*) AS n FROM audit_log')) as { n: number }).n,
});

beforeAll(async () => {
  stack = await startStack(['mgr', 'user-of', 'mallory', 'dora']);
  admin = as('admin');
  ok(await admin('POST', `${V2}/permissions/users/mgr/gateways/endpoints/${mine}`, { body: { permission: 'MANAGE' } }), 'mgr manages her endpoint');
  ok(await admin('POST', `${V2}/permissions/users/user-of/gateways/endpoints/${mine}`, { body: { permission: 'USE' } }), 'a user of it');
  ok(await admin('POST', `${V2}/permissions/users/dora/gateways/endpoints/${other}`, { body: { permission: 'READ' } }), 'a grant on the other');
  ok(await admin('POST', `${V2}/permissions/groups`, { body: { group_name: `team-${tag}` } }), 'a group');
}, 300_000);

afterAll(async () => {
  await stack?.stop();
});

/** Each attempt must be refused with one of `statuses` and leave the store as it was. */
async function refusedAll(who: Caller, attempts: ReadonlyArray<readonly [string, string, unknown?]>, statuses: readonly number[] = [403]) {
  const before = await state();
  for (const [method, path, body] of attempts) {
    const r = await who(method, path, body === undefined ? {} : { body });
    expect(statuses, `${method} ${path} → ${r.status} ${r.text.slice(0, 200)}`).toContain(r.status);
    expect(r.json?.error_code, `${method} ${path}`).toBeTypeOf('string');
  }
  expect(await state()).toEqual(before);
}

describe('a manager of one endpoint', () => {
  it('grants on it (both grantee sides), and reads its grants', async () => {
    const mgr = as('mgr');
    for (const prefix of PREFIXES) {
      ok(await mgr('POST', `${prefix}/permissions/users/dora/gateways/endpoints/${mine}`, { body: { permission: 'USE' } }), 'grant dora');
      ok(await mgr('DELETE', `${prefix}/permissions/users/dora/gateways/endpoints/${mine}`), 'revoke dora');
      ok(await mgr('POST', `${prefix}/permissions/groups/team-${tag}/gateways/endpoints/${mine}`, { body: { permission: 'READ' } }), 'grant the team');
      ok(await mgr('DELETE', `${prefix}/permissions/groups/team-${tag}/gateways/endpoints/${mine}`), 'revoke the team');
      expect((await mgr('GET', `${prefix}/permissions/gateways/endpoints/${mine}/users`)).status).toBe(200);
    }
  });

  it('cannot grant, change, revoke or list on another endpoint, nor on a secret or model definition of the same name', async () => {
    const mgr = as('mgr');
    const attempts = PREFIXES.flatMap((prefix) => [
      ['POST', `${prefix}/permissions/users/mallory/gateways/endpoints/${other}`, { permission: 'MANAGE' }] as const,
      ['PATCH', `${prefix}/permissions/users/dora/gateways/endpoints/${other}`, { permission: 'MANAGE' }] as const,
      ['DELETE', `${prefix}/permissions/users/dora/gateways/endpoints/${other}`] as const,
      ['POST', `${prefix}/permissions/groups/team-${tag}/gateways/endpoints/${other}`, { permission: 'READ' }] as const,
      ['GET', `${prefix}/permissions/gateways/endpoints/${other}/users`] as const,
      ['GET', `${prefix}/permissions/gateways/endpoints/${other}/groups`] as const,
      ['GET', `${prefix}/permissions/ui/gateways/endpoints/${other}/grants`] as const,
      ['GET', `${prefix}/permissions/ui/gateways/endpoints/${other}/effective`] as const,
      // The same name is another resource under another gateway kind (or an older kind's segment).
      ...(['secrets', 'model-definitions'] as const).map((kind) => ['POST', `${prefix}/permissions/users/mgr/gateways/${kind}/${mine}`, { permission: 'USE' }] as const),
      ['POST', `${prefix}/permissions/users/mgr/registered-models/${mine}`, { permission: 'MANAGE' }] as const,
      ['POST', `${prefix}/permissions/users/mgr/prompts/${mine}`, { permission: 'MANAGE' }] as const,
    ]);
    await refusedAll(mgr, attempts);
  });

  it('cannot reach another endpoint through the path: dot segments, encoded slashes, double encoding, case, control characters', async () => {
    const mgr = as('mgr');
    const grant = (tail: string) => ['POST', `${V2}/permissions/users/mallory/gateways/endpoints/${tail}`, { permission: 'MANAGE' }] as const;
    const before = await state();
    for (const [method, path, body] of [
      grant(`${mine}/../${other}`),
      grant(`${mine}%2F..%2F${other}`),
      grant(`${mine}%252F..%252F${other}`),
      grant(`${mine}%2f%2e%2e%2f${other}`),
      grant(`${encodeURIComponent(other)}%00`),
      grant(`${other}%0a`),
      ['POST', `${V2}/permissions/users/mallory/gateways/Endpoints/${other}`, { permission: 'MANAGE' }] as const,
      ['POST', `${V2}/permissions/users/mallory/gateways/endpoints/${mine}/../../endpoints/${other}`, { permission: 'MANAGE' }] as const,
      ['POST', `${V2}/permissions/users/mallory/gateways%2Fendpoints%2F${other}`, { permission: 'MANAGE' }] as const,
    ]) {
      const r = await mgr(method, path, { body, verbatim: true });
      // Refused (400 bad path, 403 not hers, 404 no such admin route): never a grant made.
      expect([400, 403, 404], `${path} → ${r.status} ${r.text.slice(0, 200)}`).toContain(r.status);
    }
    expect(await state()).toEqual(before);
    // A name with a slash is named by its encoded `/`, which keeps it one segment: the grant is on that name, no other.
    // (On a secret: MLflow takes no `/` in an endpoint's name, so a grant on one is a 400.)
    const slashedEndpoint = await admin('POST', `${V2}/permissions/users/dora/gateways/endpoints/${encodeURIComponent(`${mine}/x`)}`, { body: { permission: 'READ' } });
    expect(slashedEndpoint.status, slashedEndpoint.text).toBe(400);
    const slashedPath = `${V2}/permissions/users/dora/gateways/secrets/${encodeURIComponent(`${mine}/x`)}`;
    const slashed = await admin('POST', slashedPath, { body: { permission: 'READ' } });
    expect(slashed.status, slashed.text).toBe(201);
    expect(slashed.json).toMatchObject({ permission: { name: `${mine}/x`, username: 'dora', permission: 'READ' } });
    expect((await admin('DELETE', slashedPath)).status).toBe(200);
    expect((await state()).grants).toEqual(before.grants);
  });

  it('cannot slip a grant on another endpoint into a batch, nor give herself pattern grants', async () => {
    const mgr = as('mgr');
    await refusedAll(mgr, [
      [
        'POST',
        `${V2}/permissions/batch`,
        {
          calls: [
            { method: 'POST', path: `permissions/users/dora/gateways/endpoints/${mine}`, body: { permission: 'READ' } },
            { method: 'POST', path: `permissions/users/mallory/gateways/endpoints/${other}`, body: { permission: 'MANAGE' } },
          ],
        },
      ],
      ['POST', `${V2}/permissions/users/mgr/patterns`, { resource_type: 'gateway_endpoint', pattern: `${other.slice(0, 5)}*`, permission: 'MANAGE' }],
      ['POST', `${V2}/permissions/users/mgr/patterns`, { resource_type: 'gateway_endpoint', pattern: '*', permission: 'USE' }],
    ]);
  });
});

describe('USE', () => {
  it('lets its holder use the endpoint, not change who may', async () => {
    const user = as('user-of');
    await refusedAll(user, [
      ['POST', `${V2}/permissions/users/mallory/gateways/endpoints/${mine}`, { permission: 'USE' }],
      ['PATCH', `${V2}/permissions/users/user-of/gateways/endpoints/${mine}`, { permission: 'MANAGE' }],
      ['DELETE', `${V2}/permissions/users/mgr/gateways/endpoints/${mine}`],
      ['GET', `${V2}/permissions/gateways/endpoints/${mine}/users`],
      ['GET', `${V2}/permissions/ui/gateways/endpoints/${mine}/effective`],
    ]);
  });

  it('is refused on experiments, registered models and prompts, even to an administrator, directly, as a pattern and in a batch', async () => {
    const experimentId = ok(await admin('POST', `${V2}/experiments/create`, { body: { name: `gw-${tag}` } }), 'experiment').experiment_id as string;
    const attempts = PREFIXES.flatMap((prefix) => [
      ['POST', `${prefix}/permissions/users/dora/experiments/${experimentId}`, { permission: 'USE' }] as const,
      ['POST', `${prefix}/permissions/groups/team-${tag}/registered-models/${mine}`, { permission: 'USE' }] as const,
      ['POST', `${prefix}/permissions/users/dora/prompts/${mine}`, { permission: 'USE' }] as const,
      ['POST', `${prefix}/permissions/groups/team-${tag}/patterns`, { resource_type: 'experiment', pattern: 'gw-*', permission: 'USE' }] as const,
      ['POST', `${prefix}/permissions/users/dora/patterns`, { resource_type: 'registered_model', pattern: 'team-*', permission: 'USE' }] as const,
      ['POST', `${prefix}/permissions/batch`, { calls: [{ method: 'POST', path: `permissions/users/dora/prompts/${mine}`, body: { permission: 'USE' } }] }] as const,
    ]);
    const before = await state();
    for (const [method, path, body] of attempts) {
      const r = await admin(method, path, { body });
      expect(r.status, `${path} → ${r.text}`).toBe(400);
      expect(r.json).toMatchObject({ error_code: 'INVALID_PARAMETER_VALUE', message: expect.stringContaining('READ, EDIT, MANAGE, NO_PERMISSIONS') });
    }
    // An existing grant cannot be turned into USE either.
    ok(await admin('POST', `${V2}/permissions/users/dora/experiments/${experimentId}`, { body: { permission: 'READ' } }), 'a READ');
    const changed = await admin('PATCH', `${V2}/permissions/users/dora/experiments/${experimentId}`, { body: { permission: 'USE' } });
    expect(changed.status).toBe(400);
    expect(ok(await admin('GET', `${V2}/permissions/users/dora/experiments/${experimentId}`), 'still READ').permission.permission).toBe('READ');
    ok(await admin('DELETE', `${V2}/permissions/users/dora/experiments/${experimentId}`), 'clean up');
    expect((await state()).grants).toEqual(before.grants);
  });

  it('on every gateway kind is taken from an administrator, and its holder lists the grants of no one', async () => {
    for (const kind of KINDS) ok(await admin('POST', `${V2}/permissions/users/mallory/gateways/${kind}/${other}`, { body: { permission: 'USE' } }), `USE on ${kind}`);
    await refusedAll(as('mallory'), [
      ...KINDS.map((kind) => ['GET', `${V2}/permissions/gateways/${kind}/${other}/users`] as const),
      ...KINDS.map((kind) => ['POST', `${V2}/permissions/users/mallory/gateways/${kind}/${other}`, { permission: 'MANAGE' }] as const),
      ['GET', `${V2}/permissions/users/dora/gateways/endpoints`],
    ]);
    // Her own permissions page: what she holds, and nothing that tells another name exists.
    const mineShown = ok(await as('mallory')('GET', `${V2}/permissions/ui/my-permissions/gateways/endpoints`, { query: { id: [other, mine, `nobody-${tag}`] } }), 'own');
    expect(mineShown.permissions[other]).toMatchObject({ permission: 'USE' });
    expect(mineShown.permissions[mine]).toEqual(mineShown.permissions[`nobody-${tag}`]);
  });
});
