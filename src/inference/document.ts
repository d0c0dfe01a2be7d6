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

export function validateDocument<T extends z.ZodType>(schema: T, value: unknown, source: string): z.output<T> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  throw new InferenceConfigError(source, parsed.error.issues.map(describeIssue));
}

function describeIssue(issue: z.core.$ZodIssue): string {
  const path = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
  return `${path || '(top level)'}: ${issue.message}`;
}
