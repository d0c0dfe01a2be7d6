import type { AuditLog } from '../audit/audit-log.js';
import type { Sql } from '../store/sql.js';
import type { NamedGrantee } from './grant-writer.js';
import type { PatternGrantsRepo } from './pattern-grants-repo.js';
import type { Permission, ResourceKind } from './types.js';

const target = (kind: ResourceKind, pattern: string, who: NamedGrantee) => `${kind}:${pattern}/${who.grantee.type}:${who.name}`;

export type PatternChange = 'created' | 'updated' | 'unchanged';

/**
 * The one writer of pattern grants (admin API, policy apply): each change in one transaction with
 * its audit entry (`pattern.create|update|delete`), then the pattern index re-read.
 */
export function createPatternWriter(deps: {
  readonly sql: Sql;
  readonly patterns: PatternGrantsRepo;
  readonly audit: AuditLog;
  readonly patternsChanged: () => Promise<void>;
}) {
  const { sql, patterns, audit } = deps;

  return {
    /** Grants `permission` on every `kind` named to match `pattern`, or changes the grantee's permission on it. */
    async set(actor: string, who: NamedGrantee, kind: ResourceKind, pattern: string, permission: Permission): Promise<PatternChange> {
      const change = await sql.transaction(async (): Promise<PatternChange> => {
        const old = await patterns.get(who.grantee, kind, pattern);
        if (old === permission) return 'unchanged';
        await patterns.upsert(who.grantee, kind, pattern, permission);
        await audit.record({
          actor,
          action: old === undefined ? 'pattern.create' : 'pattern.update',
          target: target(kind, pattern, who),
          ...(old === undefined ? {} : { oldValue: old }),
          newValue: permission,
        });
        return old === undefined ? 'created' : 'updated';
      });
      if (change !== 'unchanged') await deps.patternsChanged();
      return change;
    },

    /** Removes the grantee's pattern grant; the permission it held, or undefined when there was none. */
    async remove(actor: string, who: NamedGrantee, kind: ResourceKind, pattern: string): Promise<Permission | undefined> {
      const old = await sql.transaction(async () => {
        const held = await patterns.get(who.grantee, kind, pattern);
        if (held === undefined) return undefined;
        await patterns.delete(who.grantee, kind, pattern);
        await audit.record({ actor, action: 'pattern.delete', target: target(kind, pattern, who), oldValue: held });
        return held;
      });
      if (old !== undefined) await deps.patternsChanged();
      return old;
    },
  };
}

export type PatternWriter = ReturnType<typeof createPatternWriter>;
