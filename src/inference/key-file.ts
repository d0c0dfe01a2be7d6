import { z } from 'zod';
import { digestKey, type ApiKey } from './api-key.js';
import { routeName } from './config.js';
import { InferenceConfigError, parseDocumentText, validateDocument } from './document.js';

/** Visible ASCII without spaces or commas: a comma would be ambiguous once Node joins repeated headers. */
export const keyValue = z
  .string({ error: 'expected a string; quote keys that YAML would read as numbers' })
  .regex(/^[\x21-\x2b\x2d-\x7e]{8,1024}$/, 'must be 8 to 1024 visible ASCII characters, without spaces or commas');

const keyEntrySchema = z
  .object({
    id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'expected a short name such as "team-a-2025-06"'),
    /** The key in plain text, as a client sends it. */
    value: keyValue.optional(),
    /** Or only its SHA-256 (hex), so the Secret never holds the key itself. */
    sha256: z
      .string({ error: 'expected a quoted string of 64 hex characters' })
      .regex(/^[0-9a-fA-F]{64}$/, 'expected 64 hex characters')
      .optional(),
    routes: z.array(routeName).min(1).optional(),
    models: z.array(z.string().min(1)).min(1).optional(),
  })
  .strict()
  .refine((k) => (k.value === undefined) !== (k.sha256 === undefined), {
    message: 'set exactly one of value and sha256',
  });

/** `keys: []` is allowed: removing the last key must revoke it, not be refused and leave it valid. */
export const keyFileSchema = z.object({ keys: z.array(keyEntrySchema) }).strict();

export type KeyFile = z.output<typeof keyFileSchema>;
export type KeyEntry = KeyFile['keys'][number];

/**
 * Parses a key file. `knownRoutes`, when given, turns a scope naming an unknown route into an
 * error rather than a key that silently opens nothing.
 */
export function parseKeyFile(text: string, source: string, knownRoutes?: ReadonlySet<string>): ApiKey[] {
  const file = validateDocument(keyFileSchema, parseDocumentText(text, source), source, {
    unnamedUnknownFields: (path) => Object.keys(path.length === 0 ? keyFileSchema.shape : keyEntrySchema.shape),
  });
  return toApiKeys(file.keys, source, knownRoutes);
}

export function toApiKeys(entries: readonly KeyEntry[], source: string, knownRoutes?: ReadonlySet<string>): ApiKey[] {
  const problems: string[] = [];
  const byId = new Map<string, number>();
  const byDigest = new Map<string, string>();
  const keys = entries.map((entry, i) => {
    if (byId.has(entry.id)) problems.push(`keys[${i}].id: duplicate id "${entry.id}"`);
    byId.set(entry.id, i);
    const digest = entry.value !== undefined ? digestKey(entry.value) : Buffer.from(entry.sha256!, 'hex');
    const hex = digest.toString('hex');
    const twin = byDigest.get(hex);
    if (twin !== undefined) problems.push(`keys[${i}]: same key as "${twin}"; give each key once with all its routes`);
    byDigest.set(hex, entry.id);
    for (const route of entry.routes ?? []) {
      if (knownRoutes && !knownRoutes.has(route)) problems.push(`keys[${i}].routes: no route is named "${route}"`);
    }
    const key: ApiKey = {
      id: entry.id,
      digest,
      ...(entry.routes ? { routes: new Set(entry.routes) } : {}),
      ...(entry.models ? { models: new Set(entry.models) } : {}),
    };
    return key;
  });
  if (problems.length) throw new InferenceConfigError(source, problems);
  return keys;
}

/**
 * Refuses file keys that repeat an id or a key of the fixed ones (the environment's): a key scoped
 * in the file but also valid everywhere from the environment would make its scope meaningless, and
 * one id for two keys would make logs ambiguous. Names ids and positions, never a key.
 */
export function checkAgainstFixedKeys(fileKeys: readonly ApiKey[], fixedKeys: readonly ApiKey[], source: string, fixedSource: string): void {
  const problems: string[] = [];
  fileKeys.forEach((key, i) => {
    const sameId = fixedKeys.find((f) => f.id === key.id);
    if (sameId) problems.push(`keys[${i}].id: "${key.id}" is also the id of a key from ${fixedSource}`);
    const sameKey = fixedKeys.find((f) => f.digest.equals(key.digest));
    if (sameKey) problems.push(`keys[${i}]: same key as "${sameKey.id}" from ${fixedSource}; give each key once`);
  });
  if (problems.length) throw new InferenceConfigError(source, problems);
}

/**
 * Keys from an environment variable: comma-separated, each valid on every route. Ids are
 * positional (`env-1`, …) so logs can tell them apart without showing them.
 */
export function parseKeyList(value: string, source = 'environment'): ApiKey[] {
  const values = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const problems: string[] = [];
  values.forEach((v, i) => {
    if (!keyValue.safeParse(v).success) problems.push(`key ${i + 1}: must be 8 to 1024 visible ASCII characters, without spaces or commas`);
  });
  if (problems.length) throw new InferenceConfigError(source, problems);
  return toApiKeys(
    values.map((v, i) => ({ id: `env-${i + 1}`, value: v })),
    source,
  );
}
