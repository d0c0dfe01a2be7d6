import type { AuditLog } from '../audit/audit-log.js';
import type { GrantWriter } from '../authz/grant-writer.js';
import type { Grantee, GrantsRepo } from '../authz/grants-repo.js';
import type { PatternGrantsRepo } from '../authz/pattern-grants-repo.js';
import type { PatternWriter } from '../authz/pattern-writer.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { Sql } from '../store/sql.js';
import type { LegacyPasswordRepo } from '../tokens/legacy-password-repo.js';
import { granteeText, type ImportPlan, type PlanGrantee } from './plan.js';

export interface ImportStore {
  readonly sql: Sql;
  readonly directory: Directory;
  readonly grants: GrantsRepo;
  readonly patterns: PatternGrantsRepo;
  readonly passwords: LegacyPasswordRepo;
  readonly principalWriter: PrincipalWriter;
  readonly grantWriter: GrantWriter;
  readonly patternWriter: PatternWriter;
  readonly audit: AuditLog;
}

/** One change the plan makes to flowgate's store: what it says, and the write (run inside the import's transaction). */
interface Change {
  readonly line: string;
  readonly apply: () => Promise<unknown>;
}

export interface ImportOutcome {
  /** The changes, in the order made (or, in a dry run, that would be made). */
  readonly changes: readonly string[];
  /** Parts of the plan left out against flowgate's current state (a password of a user holding tokens). */
  readonly kept: readonly string[];
}

/**
 * Applies the plan in one transaction: all of it or nothing. Only what differs from the store is
 * written (so a second import of the same database changes nothing and audits nothing); nothing
 * flowgate holds is removed or lowered except a grant the plan sets to another level.
 */
export async function applyPlan(plan: ImportPlan, s: ImportStore, o: { readonly actor: string; readonly dryRun: boolean }): Promise<ImportOutcome> {
  const run = async () => {
    const { changes, kept } = await diff(plan, s, o.actor);
    if (!o.dryRun) {
      for (const c of changes) await c.apply();
      if (changes.length > 0) await s.audit.record({ actor: o.actor, action: 'import.apply', target: plan.source, newValue: { changes: changes.length } });
    }
    return { changes: changes.map((c) => c.line), kept };
  };
  // The diff is read inside the transaction too, so what it compared against cannot change under it.
  return o.dryRun ? run() : s.sql.transaction(run);
}

async function diff(plan: ImportPlan, s: ImportStore, actor: string): Promise<{ changes: Change[]; kept: string[] }> {
  const changes: Change[] = [];
  const kept: string[] = [];
  const userId = async (name: string) => (await s.directory.userByName(name))!.id;
  const groupId = async (name: string) => (await s.directory.groupByName(name))!.id;
  const granteeOf = async (g: PlanGrantee): Promise<Grantee> => (g.type === 'user' ? { type: 'user', id: await userId(g.name) } : { type: 'group', id: await groupId(g.name) });
  const named = async (g: PlanGrantee) => ({ grantee: await granteeOf(g), name: g.name });

  for (const u of plan.users) {
    const existing = await s.directory.userByName(u.username);
    if (!existing)
      changes.push({
        line: `+ user ${u.username}${u.isAdmin ? ' (administrator)' : ''}${u.isServiceAccount ? ' (service account)' : ''}`,
        apply: () => s.principalWriter.createUser(actor, { username: u.username, displayName: u.displayName ?? u.username, isAdmin: u.isAdmin, isServiceAccount: u.isServiceAccount }),
      });
    else if (u.isAdmin && !existing.isAdmin)
      changes.push({ line: `~ user ${u.username}: administrator`, apply: () => s.principalWriter.updateUser(actor, existing, existing.displayName, true) });
    if (u.passwordHash === undefined) continue;
    if (existing && (await s.passwords.hasTokens(existing.id))) {
      kept.push(`password of ${u.username}: they hold flowgate tokens already, which retire it`);
      continue;
    }
    if (existing && (await s.passwords.hashOf(existing.id)) === u.passwordHash) continue;
    const hash = u.passwordHash;
    changes.push({
      line: `+ password of ${u.username} (${hash.slice(0, hash.indexOf(':') < 0 ? hash.indexOf('$') : hash.indexOf(':'))})`,
      apply: async () => {
        await s.passwords.set(await userId(u.username), hash, plan.source);
        // Never the hash: that the password came over, and from where, is what the log needs.
        await s.audit.record({ actor, action: 'user.legacy-password', target: `user:${u.username}`, newValue: { source: plan.source } });
      },
    });
  }

  for (const g of plan.groups) {
    const group = await s.directory.groupByName(g.name);
    if (!group) changes.push({ line: `+ group ${g.name}`, apply: () => s.principalWriter.createGroup(actor, g.name) });
    const members = group ? new Set((await s.directory.membersOfGroup(group.id)).map((m) => m.username)) : new Set<string>();
    for (const m of g.members)
      if (!members.has(m))
        changes.push({
          line: `+ member ${m} of group ${g.name}`,
          apply: async () => s.principalWriter.addMember(actor, (await s.directory.groupByName(g.name))!, (await s.directory.userByName(m))!),
        });
  }

  for (const g of plan.grants) {
    const current = await currentGrant(s, g.grantee, (grantee) => s.grants.get(grantee, g.kind, g.id));
    if (current === g.permission) continue;
    const ref = { kind: g.kind, id: g.id } as Parameters<GrantWriter['create']>[2];
    changes.push(
      current === undefined
        ? { line: `+ grant ${granteeText(g.grantee)}: ${g.permission} on ${g.kind} ${g.id}`, apply: async () => s.grantWriter.create(actor, await named(g.grantee), ref, g.permission) }
        : {
            line: `~ grant ${granteeText(g.grantee)}: ${current} → ${g.permission} on ${g.kind} ${g.id}`,
            apply: async () => s.grantWriter.update(actor, await named(g.grantee), ref, current, g.permission),
          },
    );
  }

  for (const p of plan.patterns) {
    const current = await currentGrant(s, p.grantee, (grantee) => s.patterns.get(grantee, p.kind, p.pattern));
    if (current === p.permission) continue;
    changes.push({
      line: `${current === undefined ? '+' : '~'} pattern ${granteeText(p.grantee)}: ${current === undefined ? '' : `${current} → `}${p.permission} on every ${p.kind} matching ${p.pattern}`,
      apply: async () => s.patternWriter.set(actor, await named(p.grantee), p.kind, p.pattern, p.permission),
    });
  }
  return { changes, kept };
}

/** The grantee's permission now; undefined when they hold none or do not exist yet. */
async function currentGrant<P>(s: ImportStore, who: PlanGrantee, read: (g: Grantee) => Promise<P | undefined>): Promise<P | undefined> {
  const found = who.type === 'user' ? await s.directory.userByName(who.name) : await s.directory.groupByName(who.name);
  return found ? read({ type: who.type, id: found.id }) : undefined;
}
