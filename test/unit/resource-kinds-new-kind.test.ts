import { describe, expect, it, vi } from 'vitest';
import { GRANT_ROUTES } from '../../src/admin/grants.js';
import { PATTERN_GRANT_ROUTES } from '../../src/admin/pattern-grants.js';
import { UI_RESOURCE_ROUTES } from '../../src/admin/ui-resources.js';
import { mlflowExistence } from '../../src/authz/orphan-grants.js';
import type { ResourceRef } from '../../src/authz/types.js';
import type { AdminClient } from '../../src/commands/admin-cli/client.js';
import { kindNamed } from '../../src/commands/admin-cli/resources.js';
import { policyDiff } from '../../src/commands/policy-diff.js';
import { policyDocument, type PolicyDocument } from '../../src/commands/policy-document.js';
import type { ExperimentNames } from '../../src/commands/policy-state.js';
import { RESOURCE_TYPE_LABELS } from '../../src/metrics/registry.js';
import type { UpstreamJson } from '../../src/upstream/json-client.js';
import { KINDS as UI_KINDS } from '../../ui/src/kind-list.js';

/**
 * A kind added to the registry alone (here a hypothetical MLflow notebook, named by its name) reaches every
 * consumer that derives from the registry, with no edit of theirs: none of them may fall back to
 * another kind's behaviour (the orphan check asking registered-models/get, a policy grant read as a
 * prompt's). The store is the one consumer that needs more: a migration widening its CHECKs.
 */
vi.mock('../../src/resources/kind-table.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/resources/kind-table.js')>();
  const notebook = {
    kind: 'notebook',
    id: 'name',
    stored: { as: 'notebook', prompt: false },
    lookup: { path: '/ajax-api/3.0/mlflow/notebooks/get', param: 'name' },
    permissions: ['READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS'],
    admin: { segment: 'notebooks', param: 'notebook_name' },
    cli: ['notebook', 'notebooks'],
    policyField: 'notebook',
    ui: { route: 'notebooks', title: 'Notebooks', one: 'notebook' },
    metricLabel: 'notebook',
  };
  return { ...real, KINDS: { ...real.KINDS, notebook } };
});

const notebook = { kind: 'notebook', id: 'chat' } as unknown as ResourceRef;

describe('a kind declared only in the registry', () => {
  it('is checked for orphans through its own look-up, not as a registered model', async () => {
    const asked: string[] = [];
    const upstream = {
      call: async (_method: string, path: string, input: Record<string, unknown>) => {
        asked.push(`${path}?${new URLSearchParams(input as Record<string, string>)}`);
        return { status: 404, json: { error_code: 'RESOURCE_DOES_NOT_EXIST' } };
      },
    } as unknown as UpstreamJson;
    expect(await mlflowExistence(upstream)(notebook)).toBe(false);
    expect(asked).toEqual(['/ajax-api/3.0/mlflow/notebooks/get?name=chat']);
  });

  it("is a policy file's grant of its own, applied on its own admin path, not a prompt's", async () => {
    const empty: PolicyDocument = policyDocument.parse({ version: 1 });
    const wanted = policyDocument.parse({
      version: 1,
      grants: [{ notebook: 'chat', user: 'ann', permission: 'READ' }],
      patterns: [{ resource_type: 'notebook', pattern: 'team-*', group: 'team', permission: 'EDIT' }],
    });
    const noExperiments = { idOf: async () => undefined, nameOf: async () => undefined } as unknown as ExperimentNames;
    const changes = policyDiff(empty, wanted, () => noExperiments, false, 'admin');
    expect(changes.map((c) => c.line)).toContain('+ grant notebook:chat user:ann READ');
    const calls: string[] = [];
    const client = { call: async (method: string, path: string) => void calls.push(`${method} ${path}`) } as unknown as AdminClient;
    for (const c of changes) await c.apply(client);
    expect(calls).toContain('POST permissions/users/ann/notebooks/chat');
  });

  it('has admin API grant routes, pattern grants, a CLI word, a Manage screen and a metrics label', () => {
    const paths = [...GRANT_ROUTES, ...UI_RESOURCE_ROUTES].map((r) => `${r.method} ${r.path}`);
    expect(paths).toContain('POST /mlflow/permissions/users/:username/notebooks/:notebook_name');
    expect(paths).toContain('GET /mlflow/permissions/notebooks/:notebook_name/groups');
    expect(paths).toContain('GET /mlflow/permissions/ui/notebooks/:notebook_name/effective');
    expect(paths).toContain('GET /mlflow/permissions/ui/my-permissions/notebooks');
    const patternBody = PATTERN_GRANT_ROUTES.find((r) => r.method === 'POST')!.body!;
    expect(patternBody.safeParse({ resource_type: 'notebook', pattern: 'team-*', permission: 'READ' }).success).toBe(true);
    // The levels it declares are the ones it takes: no USE here.
    expect(patternBody.safeParse({ resource_type: 'notebook', pattern: 'team-*', permission: 'USE' }).success).toBe(false);
    expect(kindNamed('notebook').segment).toBe('notebooks');
    expect(UI_KINDS.map((k) => k.route)).toContain('notebooks');
    expect(RESOURCE_TYPE_LABELS.get('notebook')).toBe('notebook');
  });
});
