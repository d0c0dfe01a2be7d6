import { z } from 'zod';

const name = z.string().min(1).max(256);
const permission = z.enum(['READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS']);

const person = z.strictObject({ username: name, display_name: name.optional(), is_admin: z.boolean().optional() });
const serviceAccount = z.strictObject({ username: name, display_name: name.optional() });
const group = z.strictObject({ name, members: z.array(name).optional() });

/** A grant names its resource by name (experiments too), and its grantee as a user or a group. */
const grant = z
  .strictObject({
    experiment: name.optional(),
    registered_model: name.optional(),
    prompt: name.optional(),
    user: name.optional(),
    group: name.optional(),
    permission,
  })
  .refine((g) => [g.experiment, g.registered_model, g.prompt].filter((v) => v !== undefined).length === 1, {
    message: 'name exactly one of experiment, registered_model, prompt',
  })
  .refine((g) => (g.user === undefined) !== (g.group === undefined), { message: 'name exactly one of user, group' });

/** A grant on every resource of a kind whose name matches a glob (`*`, `?`, `\` escapes). */
const patternGrant = z
  .strictObject({
    resource_type: z.enum(['experiment', 'registered_model', 'prompt']),
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

/** The JSON Schema of the file (committed as schemas/policy.schema.json). */
export function policyJsonSchema(): unknown {
  return {
    ...z.toJSONSchema(policyDocument, { io: 'input', unrepresentable: 'any' }),
    $id: 'https://github.com/flowgate/flowgate/schemas/policy.schema.json',
    title: 'flowgate policy',
    description: 'Users, service accounts, groups, memberships, grants and pattern grants, resources named by name; never tokens.',
  };
}
