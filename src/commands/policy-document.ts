import { z } from 'zod';
import { KIND_SPECS, keyedInWorkspace, KINDS, permissionRefusal, POLICY_FIELDS, RESOURCE_KINDS, type PolicyField, type ResourceKind } from '../resources/kinds.js';
import { DEFAULT_WORKSPACE } from '../workspaces/names.js';
import { PERMISSIONS } from '../resources/permissions.js';

const name = z.string().min(1).max(256);
/**
 * The MLflow workspace a grant is kept in (MLflow run with workspaces); absent: the default one. Not
 * `workspace`, which names a workspace's own membership grant.
 */
const inWorkspace = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be an MLflow workspace name').max(63);
const permission = z.enum(PERMISSIONS);

/** A grant's resource: one field per kind (`experiment`, `registered_model`, …), named by name. */
const resourceFields = Object.fromEntries(POLICY_FIELDS.map((f) => [f, name.optional()])) as { [F in PolicyField]: z.ZodOptional<typeof name> };

/**
 * How a person signs in: `oidc` through the identity provider (bound to the account of their first
 * sign-in), `local` with access tokens only. Absent: unchanged, and for a new person flowgate's
 * default (`oidc` where OIDC is configured). A file never carries the binding itself.
 */
const signIn = z.enum(['local', 'oidc']);
const person = z.strictObject({ username: name, display_name: name.optional(), is_admin: z.boolean().optional(), sign_in: signIn.optional() });
const serviceAccount = z.strictObject({ username: name, display_name: name.optional() });
const group = z.strictObject({ name, members: z.array(name).optional() });

/** A grant names its resource by name (experiments too), and its grantee as a user or a group. */
const grant = z
  .strictObject({
    ...resourceFields,
    in_workspace: inWorkspace.optional(),
    user: name.optional(),
    group: name.optional(),
    permission,
  })
  .refine((g) => POLICY_FIELDS.filter((f) => g[f] !== undefined).length === 1, {
    message: `name exactly one of ${POLICY_FIELDS.join(', ')}`,
  })
  .refine((g) => (g.user === undefined) !== (g.group === undefined), { message: 'name exactly one of user, group' })
  .superRefine((g, ctx) => {
    const kind = RESOURCE_KINDS.find((k) => g[KINDS[k].policyField] !== undefined);
    const refusal = kind && permissionRefusal(kind, g.permission);
    if (refusal !== undefined) ctx.addIssue({ code: 'custom', path: ['permission'], message: refusal });
  });

/** A grant on every resource of a kind whose name matches a glob (`*`, `?`, `\` escapes). */
const patternGrant = z
  .strictObject({
    resource_type: z.enum(RESOURCE_KINDS as [ResourceKind, ...ResourceKind[]]),
    pattern: z.string().min(1).max(256),
    in_workspace: inWorkspace.optional(),
    user: name.optional(),
    group: name.optional(),
    permission,
  })
  .refine((g) => (g.user === undefined) !== (g.group === undefined), { message: 'name exactly one of user, group' })
  .superRefine((g, ctx) => {
    const refusal = permissionRefusal(g.resource_type, g.permission);
    if (refusal !== undefined) ctx.addIssue({ code: 'custom', path: ['permission'], message: refusal });
  });

/** The file `flowgate policy export` writes and `flowgate policy apply` reads. It never holds a token. */
export const policyDocument = z.strictObject({
  version: z.literal(1),
  users: z.array(person).default([]),
  service_accounts: z.array(serviceAccount).default([]),
  groups: z.array(group).default([]),
  grants: z.array(grant).default([]),
  patterns: z.array(patternGrant).default([]),
});

export type PolicyDocument = z.infer<typeof policyDocument>;
export type PolicyGrant = PolicyDocument['grants'][number];
export type PolicyPatternGrant = PolicyDocument['patterns'][number];

/** The kind and name of a grant's resource (the one kind field it sets). */
export function grantResource(g: PolicyGrant): { kind: ResourceKind; field: PolicyField; name: string } {
  const kind = RESOURCE_KINDS.find((k) => g[KINDS[k].policyField] !== undefined)!;
  const field = KINDS[kind].policyField;
  return { kind, field, name: g[field]! };
}

/**
 * The document with each grant's and pattern grant's workspace as an export writes it: none for the
 * default workspace (`in_workspace: default` is the same as none), nor for a kind kept in no
 * workspace (a workspace's own membership). So a grant is matched with the one flowgate holds
 * whichever way the file spells its workspace.
 */
export function withFileWorkspaces(doc: PolicyDocument): PolicyDocument {
  const plain = <T extends { readonly in_workspace?: string | undefined }>(x: T, kind: ResourceKind): T => {
    if (x.in_workspace === undefined || (x.in_workspace !== DEFAULT_WORKSPACE && keyedInWorkspace(kind))) return x;
    const { in_workspace: _dropped, ...rest } = x;
    return rest as T;
  };
  return {
    ...doc,
    grants: doc.grants.map((g) => plain(g, grantResource(g).kind)),
    patterns: doc.patterns.map((p) => plain(p, p.resource_type)),
  };
}

/** The JSON Schema of the file (committed as schemas/policy.schema.json). */
export function policyJsonSchema(): unknown {
  const schema = z.toJSONSchema(policyDocument, { io: 'input', unrepresentable: 'any' }) as { properties: Record<'grants' | 'patterns', { items: Record<string, unknown> }> };
  // What the refinements check, as JSON Schema says it: a grant's permission is one its kind takes (said for the kinds taking fewer).
  const narrower = KIND_SPECS.filter((k) => k.permissions.length < PERMISSIONS.length);
  schema.properties.grants.items.allOf = narrower.map((k) => ({ if: { required: [k.policyField] }, then: { properties: { permission: { enum: k.permissions } } } }));
  schema.properties.patterns.items.allOf = narrower.map((k) => ({
    if: { properties: { resource_type: { const: k.kind } }, required: ['resource_type'] },
    then: { properties: { permission: { enum: k.permissions } } },
  }));
  return {
    ...schema,
    $id: 'https://github.com/flowgate/flowgate/schemas/policy.schema.json',
    title: 'flowgate policy',
    description: 'Users, service accounts, groups, memberships, grants and pattern grants, resources named by name; never tokens.',
  };
}
