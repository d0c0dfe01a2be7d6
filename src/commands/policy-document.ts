import { z } from 'zod';
import { KINDS, POLICY_FIELDS, RESOURCE_KINDS, type PolicyField, type ResourceKind } from '../resources/kinds.js';
import { PERMISSIONS } from '../resources/permissions.js';

const name = z.string().min(1).max(256);
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
    user: name.optional(),
    group: name.optional(),
    permission,
  })
  .refine((g) => POLICY_FIELDS.filter((f) => g[f] !== undefined).length === 1, {
    message: `name exactly one of ${POLICY_FIELDS.join(', ')}`,
  })
  .refine((g) => (g.user === undefined) !== (g.group === undefined), { message: 'name exactly one of user, group' });

/** A grant on every resource of a kind whose name matches a glob (`*`, `?`, `\` escapes). */
const patternGrant = z
  .strictObject({
    resource_type: z.enum(RESOURCE_KINDS as [ResourceKind, ...ResourceKind[]]),
    pattern: z.string().min(1).max(256),
    user: name.optional(),
    group: name.optional(),
    permission,
  })
  .refine((g) => (g.user === undefined) !== (g.group === undefined), { message: 'name exactly one of user, group' });

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

/** The JSON Schema of the file (committed as schemas/policy.schema.json). */
export function policyJsonSchema(): unknown {
  return {
    ...z.toJSONSchema(policyDocument, { io: 'input', unrepresentable: 'any' }),
    $id: 'https://github.com/flowgate/flowgate/schemas/policy.schema.json',
    title: 'flowgate policy',
    description: 'Users, service accounts, groups, memberships, grants and pattern grants, resources named by name; never tokens.',
  };
}
