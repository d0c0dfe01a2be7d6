import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRANT_ROUTES } from '../../src/admin/grants.js';
import { PATTERN_GRANT_ROUTES } from '../../src/admin/pattern-grants.js';
import { buildOpenApi } from '../../src/admin/openapi.js';
import { ADMIN_ROUTES } from '../../src/admin/routes.js';
import { UI_RESOURCE_ROUTES } from '../../src/admin/ui-resources.js';
import { createGrantsRepo } from '../../src/authz/grants-repo.js';
import { mlflowExistence } from '../../src/authz/orphan-grants.js';
import { createPatternGrantsRepo } from '../../src/authz/pattern-grants-repo.js';
import type { ResourceRef } from '../../src/authz/types.js';
import { kindNamed, KINDS as CLI_KINDS, permissionNamed } from '../../src/commands/admin-cli/resources.js';
import { grantResource, policyDocument } from '../../src/commands/policy-document.js';
import { grantKey } from '../../src/commands/policy-state.js';
import { createMetrics } from '../../src/metrics/registry.js';
import { createDirectory } from '../../src/principals/directory.js';
import { adminIdOf, adminIdPath, adminIdSegments, gatewayListing, GATEWAY_KINDS, isGatewayKind, KIND_SPECS, RESOURCE_KINDS, type KindSpec } from '../../src/resources/kinds.js';
import { PERMISSIONS, rank } from '../../src/resources/permissions.js';
import type { Sql } from '../../src/store/sql.js';
import type { UpstreamJson } from '../../src/upstream/json-client.js';
import { creatable, kindOf, KINDS as UI_KINDS, permissionsFor, resourceText } from '../../ui/src/kind-list.js';
import { freshStore } from '../helpers/test-store.js';

/** An id of the kind's shape. */
const sampleId = (k: KindSpec) => (k.id === 'numeric' ? '42' : k.id === 'in_experiment' ? '42/churn-judge' : 'churn-model');
const refOf = (k: KindSpec, id = sampleId(k)) => ({ kind: k.kind, id }) as ResourceRef;

let store: { sql: Sql; close: () => Promise<void> };
beforeAll(async () => {
  store = await freshStore();
});
afterAll(async () => {
  await store?.close();
});

describe.each(KIND_SPECS.map((k) => [k.kind, k] as const))('resource kind %s', (_name, k) => {
  it('the store takes its grants and pattern grants, at every permission it declares', async () => {
    const directory = createDirectory(store.sql);
    const grants = createGrantsRepo(store.sql);
    const patterns = createPatternGrantsRepo(store.sql);
    const user = await directory.createUser({ username: `u-${k.kind}`, displayName: 'U', isAdmin: false, isServiceAccount: false });
    for (const p of k.permissions) {
      await grants.insert({ type: 'user', id: user.id }, k.kind, `${sampleId(k)}${rank(p)}`, p);
      expect(await grants.get({ type: 'user', id: user.id }, k.kind, `${sampleId(k)}${rank(p)}`)).toBe(p);
      await patterns.upsert({ type: 'user', id: user.id }, k.kind, `team-${rank(p)}/*`, p);
    }
    expect((await patterns.ofGrantee({ type: 'user', id: user.id })).filter((g) => g.kind === k.kind)).toHaveLength(k.permissions.length);
  });

  it('the admin API has its grant routes (both grantee sides, the resource side, the Manage screens) and describes them', () => {
    const paths = [...GRANT_ROUTES, ...UI_RESOURCE_ROUTES].map((r) => `${r.method} ${r.path}`);
    const { segment } = k.admin;
    // `:<param>`, or a scorer's `:experiment_id/:scorer_name` (as mlflow-oidc-auth spells it).
    const id = adminIdPath(k.kind);
    expect(id.endsWith(`:${k.admin.param}`)).toBe(true);
    if (k.id === 'in_experiment') expect(id).toBe(':experiment_id/:scorer_name');
    for (const method of ['GET', 'POST', 'PATCH', 'DELETE']) {
      expect(paths).toContain(`${method} /mlflow/permissions/users/:username/${segment}/${id}`);
      expect(paths).toContain(`${method} /mlflow/permissions/groups/:group_name/${segment}/${id}`);
    }
    expect(paths).toContain(`GET /mlflow/permissions/${segment}/${id}/users`);
    expect(paths).toContain(`GET /mlflow/permissions/${segment}/${id}/groups`);
    expect(paths).toContain(`GET /mlflow/permissions/ui/${segment}/${id}/grants`);
    expect(paths).toContain(`GET /mlflow/permissions/ui/${segment}/${id}/effective`);
    expect(paths).toContain(`GET /mlflow/permissions/ui/my-permissions/${segment}`);
    const described = Object.keys(buildOpenApi(ADMIN_ROUTES, 'test').paths);
    const openApiId = id.replace(/:([a-z_]+)/g, '{$1}');
    expect(described).toContain(`/api/2.0/mlflow/permissions/users/{username}/${segment}/${openApiId}`);
    expect(described).toContain(`/ajax-api/2.0/mlflow/permissions/ui/${segment}/${openApiId}/effective`);
  });

  it('refuses a level it does not take, and takes every one it declares (admin API both sides and patterns, CLI, policy file, UI)', () => {
    const bodies = GRANT_ROUTES.filter((r) => r.body && r.path.endsWith(`/${k.admin.segment}/${adminIdPath(k.kind)}`)).map((r) => r.body!);
    expect(bodies).toHaveLength(4); // POST and PATCH, for users and for groups
    const patternBody = PATTERN_GRANT_ROUTES.find((r) => r.method === 'POST')!.body!;
    const policy = (permission: string) =>
      policyDocument.safeParse({
        version: 1,
        grants: [{ [k.policyField]: 'a name', group: 'team', permission }],
        patterns: [{ resource_type: k.kind, pattern: 'team-*', group: 'team', permission }],
      });
    for (const p of PERMISSIONS) {
      const takes = k.permissions.includes(p);
      for (const body of bodies) {
        const parsed = body.safeParse({ permission: p });
        expect(parsed.success, `${p} on ${k.kind}`).toBe(takes);
        if (!parsed.success) expect(parsed.error.issues[0]!.message).toBe(`must be one of ${k.permissions.join(', ')} (the levels ${k.ui.title.toLowerCase()} take)`);
      }
      const pattern = patternBody.safeParse({ resource_type: k.kind, pattern: 'team-*', permission: p });
      expect(pattern.success).toBe(takes);
      if (!pattern.success) expect(pattern.error.issues[0]!.message).toContain(k.permissions.join(', '));
      const kind = kindNamed(k.cli[0]);
      if (takes) expect(permissionNamed(p.toLowerCase(), kind)).toBe(p);
      else expect(() => permissionNamed(p, kind)).toThrow(`${k.ui.title} take ${k.permissions.join(', ')}, not ${p}`);
      const file = policy(p);
      expect(file.success).toBe(takes);
      if (!file.success) expect(file.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`)).toEqual([
        `grants.0.permission: ${k.ui.title} take ${k.permissions.join(', ')}, not ${p}`,
        `patterns.0.permission: ${k.ui.title} take ${k.permissions.join(', ')}, not ${p}`,
      ]);
    }
    expect(permissionsFor(k.kind)).toEqual(k.permissions);
    // The committed JSON Schema says it too, for an editor checking the file.
    const schema = JSON.parse(readFileSync(new URL('../../schemas/policy.schema.json', import.meta.url), 'utf8'));
    const said = (items: { allOf?: Array<{ if: unknown; then: { properties: { permission: { enum: string[] } } } }> }, when: unknown) =>
      items.allOf?.find((c) => JSON.stringify(c.if) === JSON.stringify(when))?.then.properties.permission.enum ?? PERMISSIONS;
    expect(said(schema.properties.grants.items, { required: [k.policyField] })).toEqual(k.permissions);
    expect(said(schema.properties.patterns.items, { properties: { resource_type: { const: k.kind } }, required: ['resource_type'] })).toEqual(k.permissions);
  });

  it('the CLI knows it by each of its words, and lists its grants', () => {
    for (const word of k.cli) expect(kindNamed(word)).toEqual({ kind: k.kind, segment: k.admin.segment, idField: k.admin.param });
    expect(CLI_KINDS.map((c) => c.kind)).toContain(k.kind);
  });

  it('the policy file takes its grants and pattern grants, and its JSON Schema says so', () => {
    const doc = policyDocument.parse({
      version: 1,
      grants: [{ [k.policyField]: 'a name', user: 'ann', permission: k.permissions[0] }],
      patterns: [{ resource_type: k.kind, pattern: 'team-*', group: 'team', permission: k.permissions.at(-1) }],
    });
    expect(grantResource(doc.grants[0]!)).toEqual({ kind: k.kind, field: k.policyField, name: 'a name' });
    expect(grantKey(doc.grants[0]!)).toBe(`${k.policyField}:a name user:ann`);
    const schema = JSON.parse(readFileSync(new URL('../../schemas/policy.schema.json', import.meta.url), 'utf8'));
    expect(Object.keys(schema.properties.grants.items.properties)).toContain(k.policyField);
    expect(schema.properties.patterns.items.properties.resource_type.enum).toContain(k.kind);
  });

  it('the Manage screens list it under its own route, title and word', () => {
    const shown = UI_KINDS.find((u) => u.kind === k.kind);
    expect(shown).toEqual({ kind: k.kind, route: k.ui.route, segment: k.admin.segment, title: k.ui.title, one: k.ui.one });
    expect(kindOf(k.ui.route)).toBe(shown);
    expect(resourceText(k.kind, 'x')).toContain(k.ui.one);
    // MLflow's AI Gateway page creates the gateway's kinds (it takes their secret values); the screens only grant on them.
    // A scorer is registered by MLflow's clients, with its definition, and a workspace by MLflow's administrators: the screens only grant on them.
    expect(creatable(shown!)).toBe(!isGatewayKind(k.kind) && k.stored.as !== 'scorer' && k.stored.as !== 'workspace');
  });

  it("orphan detection asks MLflow through the kind's own look-up, and only RESOURCE_DOES_NOT_EXIST means gone", async () => {
    const calls: Array<{ path: string; input: Record<string, unknown> }> = [];
    let answer = { status: 404, json: { error_code: 'RESOURCE_DOES_NOT_EXIST' } as unknown };
    const upstream = {
      call: async (_method: string, path: string, input: Record<string, unknown>) => {
        calls.push({ path, input });
        return answer;
      },
    } as unknown as UpstreamJson;
    const exists = mlflowExistence(upstream);
    const lookup = k.lookup;
    if ('list' in lookup) {
      // MLflow gets it only by its generated id: its list (one answer, no paging) has the name or not.
      answer = { status: 200, json: { [lookup.list]: [{ [lookup.nameField]: 'another' }] } };
      expect(await exists(refOf(k))).toBe(false);
      expect(calls).toEqual([{ path: lookup.path, input: {} }]);
      answer = { status: 200, json: {} };
      expect(await exists(refOf(k))).toBe(false);
      answer = { status: 200, json: { [lookup.list]: [{ [lookup.nameField]: sampleId(k) }] } };
    } else if ('inPath' in lookup) {
      // MLflow gets it by its id in the path (a Skill's `@<organization>/<name>` as two segments).
      expect(await exists(refOf(k))).toBe(false);
      expect(calls).toEqual([{ path: `${lookup.path}/${sampleId(k)}`, input: {} }]);
      if ('scoped' in k) {
        // An organization's Skill: `@<organization>/<name>` as two segments of MLflow's path, not encoded as one.
        expect(await exists(refOf(k, '@acme/churn-model'))).toBe(false);
        expect(calls.at(-1)).toEqual({ path: `${lookup.path}/@acme/churn-model`, input: {} });
      }
      answer = { status: 200, json: {} };
    } else if ('experiment' in lookup) {
      // A scorer: its get takes the experiment and the name (a name may hold `/`: the first one splits).
      expect(await exists(refOf(k))).toBe(false);
      expect(calls).toEqual([{ path: lookup.path, input: { [lookup.experiment!]: '42', [lookup.param]: 'churn-judge' } }]);
      expect(await exists(refOf(k, '42/team/a judge'))).toBe(false);
      expect(calls.at(-1)).toEqual({ path: lookup.path, input: { [lookup.experiment!]: '42', [lookup.param]: 'team/a judge' } });
      // An id that names no scorer (no experiment, a padded one) is not asked about: MLflow has no such scorer.
      calls.length = 0;
      answer = { status: 200, json: {} };
      expect(await exists(refOf(k, 'judge'))).toBe(false);
      expect(await exists(refOf(k, '0042/judge'))).toBe(false);
      expect(calls).toEqual([]);
    } else {
      expect(await exists(refOf(k))).toBe(false);
      expect(calls).toEqual([{ path: lookup.path, input: { [lookup.param]: sampleId(k) } }]);
      answer = { status: 200, json: {} };
    }
    expect(await exists(refOf(k))).toBe(true);
    answer = { status: 503, json: { error_code: 'TEMPORARILY_UNAVAILABLE' } };
    expect(await exists(refOf(k))).toBeUndefined();
  });

  it('the decision metrics label it with its own label', async () => {
    const registry = new Registry();
    const metrics = createMetrics({ version: 'test', registry, defaultMetrics: false });
    metrics.recordDecision({ decision: 'allow', reason: 'direct-grant', resourceType: k.kind, route: '/api/2.0/mlflow/x' });
    expect(await registry.metrics()).toContain(`resource_type="${k.metricLabel}"`);
  });
});

describe('the registry', () => {
  it('names every kind, segment, route, CLI word and policy field once', () => {
    const once = (values: readonly string[]) => expect(new Set(values).size).toBe(values.length);
    once(RESOURCE_KINDS);
    once(KIND_SPECS.map((k) => k.admin.segment));
    once(KIND_SPECS.map((k) => k.ui.route));
    once(KIND_SPECS.flatMap((k) => k.cli));
    once(KIND_SPECS.map((k) => k.policyField));
  });

  it("lists each gateway kind where MLflow does: a kind found by name in its list is listed by that very call", () => {
    for (const kind of GATEWAY_KINDS) {
      const listing = gatewayListing(kind);
      const lookup = KIND_SPECS.find((k) => k.kind === kind)!.lookup;
      if ('list' in lookup) expect(listing).toMatchObject({ path: lookup.path, list: lookup.list, nameField: lookup.nameField });
      expect(listing.path).toMatch(/^\/api\/3\.0\/mlflow\/gateway\/[a-z-]+\/list$/);
    }
    expect(gatewayListing(GATEWAY_KINDS.find((k) => k === 'gateway_endpoint')!)).toEqual({
      path: '/api/3.0/mlflow/gateway/endpoints/list',
      list: 'endpoints',
      nameField: 'name',
      idField: 'endpoint_id',
    });
  });
});

describe('adminIdSegments', () => {
  it.each([
    ['gateway_secret', '../../users/bob', '..%2F..%2Fusers%2Fbob'],
    ['experiment', '12', '12'],
    ['scorer', '12/a/b', '12/a%2Fb'],
    ['mcp_server', 'acme/search', 'acme/search'],
    ['skill', '@acme/reviewer', '@acme/reviewer'],
    ['skill', 'plain', 'plain'],
    ['registered_model', 'a/b', 'a%2Fb'],
  ] as const)('%s %s → %s, which adminIdOf reads back', (kind, id, segments) => {
    expect(adminIdSegments(kind, id)).toBe(segments);
  });

  it('reads back through the routes adminIdPath spells', () => {
    expect(adminIdOf('scorer', { experiment_id: '12', scorer_name: 'a/b' })).toBe('12/a/b');
    expect(adminIdOf('scorer', { experiment_id: '12/x', scorer_name: 'b' })).toBeUndefined();
    expect(adminIdOf('skill', { organization: 'a/b', name: 'c' })).toBeUndefined();
  });
});
