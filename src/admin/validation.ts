import { z } from 'zod';
import { idProblem, isScoped, KINDS, permissionsOf, type KindSpec, type ResourceKind } from '../resources/kinds.js';
import { PERMISSIONS, type Permission } from '../resources/permissions.js';
import { badRequest } from '../errors.js';
import { experimentIdProblem, scorerIdProblem } from '../resources/scorer-identity.js';
import { skillIdProblem } from '../resources/skill-identity.js';

export const usernameSchema = z
  .string({ message: 'must be a string' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/, {
    message: 'must be 1-128 characters of letters, digits and . _ @ + - (starting with a letter or digit)',
  });
export const groupNameSchema = z
  .string({ message: 'must be a string' })
  .min(1, 'must not be empty')
  .max(256, 'must be at most 256 characters')
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters');
export const permissionSchema = z.enum(PERMISSIONS, {
  message: `must be one of ${PERMISSIONS.join(', ')}`,
});
/**
 * An experiment id in the one spelling the gate decides on (plain decimal: `0`, or no leading zero, no
 * sign or blank): MLflow reads `01` as experiment 1, but the gate refuses it, so a grant written under
 * `01` would be one no request is ever decided on.
 */
export const experimentIdSchema = z
  .string()
  .refine((id) => experimentIdProblem(id) === undefined, 'must be a numeric experiment id in plain decimal (no sign, blank or leading zero)');
export const modelNameSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(500, 'must be at most 500 characters')
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters');

/** The 400's words for a permission the kind does not take: which levels it does (`… (the levels experiments take)`). */
export const kindPermissionMessage = (kind: ResourceKind) => `must be one of ${permissionsOf(kind).join(', ')} (the levels ${KINDS[kind].ui.title.toLowerCase()} take)`;

/** The levels a grant on the kind may give (USE only on the kinds that take it). */
export const kindPermissionSchema = (kind: ResourceKind) => z.enum(permissionsOf(kind) as [Permission, ...Permission[]], { message: kindPermissionMessage(kind) });

/** A grant's body on the kind: its permission, one the kind takes. */
export const kindPermissionBody = (kind: ResourceKind) => z.strictObject({ permission: kindPermissionSchema(kind) });

/** `<experiment_id>/<name>`: a scorer's. */
export const scorerIdSchema = z.string().superRefine((id, ctx) => {
  const problem = scorerIdProblem(id);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

/**
 * A name the kind's resources may have in MLflow: flowgate's rule for any name (1-500 characters, no
 * control characters), then MLflow's own for the kind (`idProblem`: a workspace's, an MCP server's, a
 * registered model's, a gateway endpoint's), so a grant is never kept on a name MLflow can never hold
 * and answers a look-up of with a 400 (`grants prune` could never tell it gone).
 */
const kindNameSchema = (kind: ResourceKind): z.ZodType<string> =>
  z.string().superRefine((id, ctx) => {
    const base = modelNameSchema.safeParse(id);
    const problem = base.success ? idProblem(kind, id) : base.error.issues[0]?.message;
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

const ID_SCHEMAS = { numeric: () => experimentIdSchema, name: kindNameSchema, in_experiment: () => scorerIdSchema } as const satisfies Record<
  KindSpec['id'],
  (kind: ResourceKind) => z.ZodType<string>
>;

/** How a resource of the kind is named in a path or query: its id's shape, as MLflow would take it. */
export const resourceIdSchema = (kind: ResourceKind): z.ZodType<string> => (isScoped(kind) ? skillIdSchema : ID_SCHEMAS[KINDS[kind].id](kind));

/**
 * The id of a grant already kept: the shape alone, without MLflow's name rules for the kind, so a grant
 * made before flowgate checked them (on a name MLflow refuses) can still be read, changed and removed.
 */
export const heldIdSchema = (kind: ResourceKind): z.ZodType<string> =>
  isScoped(kind) ? skillIdSchema : KINDS[kind].id === 'name' ? modelNameSchema : resourceIdSchema(kind);

/** A Skill's `<name>` or `@<organization>/<name>`, as MLflow would take it. */
const skillIdSchema = z.string().superRefine((id, ctx) => {
  const problem = skillIdProblem(id);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

/** Parses a value with a schema, turning every problem into one clear 400 message. */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, what = 'request body'): T {
  if (value === undefined && !(schema instanceof z.ZodOptional)) {
    const result = schema.safeParse({}, { reportInput: true });
    if (result.success) return result.data;
    throw badRequest(`Missing ${what}: ${describe(result.error, what)}`);
  }
  const result = schema.safeParse(value, { reportInput: true });
  if (result.success) return result.data;
  throw badRequest(`Invalid ${what}: ${describe(result.error, what)}`);
}

/** The problems in words; a problem with the value itself names the body, or nothing when `what` already names the value (`experiment_id in the path`). */
function describe(error: z.ZodError, what: string): string {
  return error.issues
    .map((i) => {
      if (i.code === 'unrecognized_keys') return `unknown field(s) ${i.keys.map((k) => `'${k}'`).join(', ')}`;
      const field = i.path.length ? `'${i.path.join('.')}' ` : what === 'request body' ? 'body ' : '';
      const msg = i.code === 'invalid_type' && 'input' in i && i.input === undefined ? 'is required' : i.message;
      return `${field}${msg}`;
    })
    .join('; ');
}
