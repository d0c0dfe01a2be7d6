import { bodyLeavesOf, otlpExportOf, readField, spellings, type ResolveRequest } from './resolve.js';
import { PROMPT_TAG } from './mlflow-lookups.js';
import type { FieldGuard } from './types.js';

/**
 * Trace tags MLflow reads as storage locations or system state (`IMMUTABLE_TAGS` in
 * mlflow/utils/mlflow_tags.py, less `mlflow.user`, which MLflow's own client sends). MLflow's tag
 * handlers refuse some of these but not `mlflow.artifactLocation`, through which a trace of one's
 * own could be pointed at another experiment's trace data; its start and end handlers refuse none.
 */
export const RESERVED_TRACE_TAGS: ReadonlySet<string> = new Set([
  'mlflow.artifactLocation',
  'mlflow.trace.spansLocation',
  'mlflow.trace.archiveLocation',
  'mlflow.trace.archivalFailure',
]);

const RESERVED_FOLDED = new Set([...RESERVED_TRACE_TAGS].map((key) => key.toLowerCase()));

/**
 * Compared as a case-insensitive, space-padding database (MySQL's default collation) would match
 * it, so a key spelled `MLFLOW.ARTIFACTLOCATION ` cannot overwrite the real one there.
 */
const isReserved = (key: string) => RESERVED_FOLDED.has(key.trim().toLowerCase());

/**
 * The tag that makes a registered model a prompt (MLflow reads it by exact key in Python, but a
 * case-insensitive, space-padding database would store and delete `MLFLOW.PROMPT.IS_PROMPT ` as it):
 * compared the same folded way.
 */
export const isPromptFlagKey = (key: string) => key.trim().toLowerCase() === PROMPT_TAG;

/** The first field of the request that `guard` forbids a non-administrator to set, or undefined. */
export function guardedField(guard: FieldGuard, request: ResolveRequest): string | undefined {
  switch (guard.kind) {
    case 'admin_only':
      return readField({ kind: 'experiment_id', field: guard.field, from: 'auto' }, request).length > 0 ? guard.field : undefined;
    case 'reserved_tag_key': {
      const [key] = readField({ kind: 'experiment_id', field: guard.field, from: 'auto' }, request);
      return key !== undefined && isReserved(key) ? `tag '${key}'` : undefined;
    }
    case 'reserved_tag_list':
      for (const list of bodyLeavesOf(request.body, guard.field))
        for (const tag of Array.isArray(list) ? list : [])
          for (const name of spellings('key')) {
            const key = typeof tag === 'object' && tag !== null ? (tag as Record<string, unknown>)[name] : undefined;
            if (typeof key === 'string' && isReserved(key)) return `tag '${key}'`;
          }
      return undefined;
    case 'otlp_reserved_tags': {
      const key = otlpExportOf(request)?.tagKeys.find(isReserved);
      return key === undefined ? undefined : `tag '${key}' (through an OTLP attribute)`;
    }
    case 'reserved_name_prefix':
      // Folded as a case-insensitive, space-padding database (MySQL's default collation) compares names.
      for (const field of spellings(guard.field))
        for (const name of bodyLeavesOf(request.body, field))
          if (typeof name === 'string' && name.trimStart().toLowerCase().startsWith(guard.prefix)) return `a name under '${guard.prefix}' (${field})`;
      return undefined;
    case 'reserved_tag_map':
      for (const map of bodyLeavesOf(request.body, guard.field))
        if (typeof map === 'object' && map !== null)
          for (const key of Object.keys(map)) if (isReserved(key)) return `tag '${key}'`;
      return undefined;
  }
}
