import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';

/** A configuration document that failed to parse or validate; every problem is listed. */
export class InferenceConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: readonly string[],
  ) {
    super(`${source} is invalid:\n  - ${problems.join('\n  - ')}`);
    this.name = 'InferenceConfigError';
  }
}

/**
 * YAML is a superset of JSON, so one parser reads both. Parser messages quote the offending line,
 * which may hold a key, so only the position is kept.
 */
export function parseDocumentText(text: string, source: string): unknown {
  try {
    return parseYaml(text, { uniqueKeys: true });
  } catch (e) {
    const pos = (e as { linePos?: Array<{ line: number; col: number }> }).linePos?.[0];
    const where = pos ? ` at line ${pos.line}, column ${pos.col}` : '';
    const code = (e as { code?: string }).code ?? 'parse error';
    throw new InferenceConfigError(source, [`not valid YAML or JSON${where} (${code})`]);
  }
}

export interface ValidateOptions {
  /**
   * For a document holding secrets: unknown fields are never named, since a typo such as
   * `value:<key>` (no space) or a key given without `value:` turns the key into a field name.
   * Returns the fields expected at an object's path, which the message lists instead.
   */
  unnamedUnknownFields?: (path: readonly PropertyKey[]) => readonly string[];
}

export function validateDocument<T extends z.ZodType>(schema: T, value: unknown, source: string, opts: ValidateOptions = {}): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new InferenceConfigError(source, parsed.error.issues.map((issue) => describeIssue(issue, opts)));
}

/** A field name that reads as a name (a misspelt setting) rather than as data. */
const NAMEABLE_FIELD = /^[A-Za-z_][A-Za-z0-9_]{0,31}$/;

function describeIssue(issue: z.core.$ZodIssue, opts: ValidateOptions): string {
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
  // zod's own message quotes every unknown field in full, whatever it holds.
  const message = issue.code === 'unrecognized_keys' ? unknownFields(issue.keys, issue.path, opts) : issue.message;
  return `${path || '(top level)'}: ${message}`;
}

function unknownFields(keys: readonly string[], path: readonly PropertyKey[], opts: ValidateOptions): string {
  const count = keys.length === 1 ? 'an unknown field' : `${keys.length} unknown fields`;
  if (opts.unnamedUnknownFields) {
    return `${count} (not named, as it may hold a key); the fields here are ${opts.unnamedUnknownFields(path).join(', ')}`;
  }
  const named = keys.filter((k) => NAMEABLE_FIELD.test(k));
  if (named.length === keys.length) return `unknown field${keys.length === 1 ? '' : 's'} ${named.map((k) => `"${k}"`).join(', ')}`;
  return named.length ? `unknown fields ${named.map((k) => `"${k}"`).join(', ')} and ${keys.length - named.length} more` : count;
}
