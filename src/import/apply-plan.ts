import type { AuditLog } from '../audit/audit-log.js';
import type { GrantWriter } from '../authz/grant-writer.js';
import type { Grantee, GrantsRepo } from '../authz/grants-repo.js';
import type { PatternGrantsRepo } from '../authz/pattern-grants-repo.js';
import type { PatternWriter } from '../authz/pattern-writer.js';
import type { Directory } from '../principals/directory.js';
import type { PrincipalWriter } from '../principals/principal-writer.js';
import type { Sql } from '../store/sql.js';
import type { LegacyPasswordRepo } from '../tokens/legacy-password-repo.js';
import { granteeText, pluginOfSource, type ImportPlan, type PlanGrantee } from './plan.js';
import { groupNameProblem, madeBy, usernameProblem } from './refusals.js';

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

export interface ApplyOptions {
  readonly actor: string;
  readonly dryRun: boolean;
  /**
   * `--merge-existing`: the plan's groups that flowgate already has take its members and grants. Without
   * it such a group is refused before the plan is made (refusals.ts), and one found here (made since)
   * fails the apply: nothing is written.
   */
  readonly mergeExisting?: boolean;
  /** `--force`: apply though the audit log holds an earlier apply of this plugin's import. */
  readonly force?: boolean;
}

/** An earlier apply of the same plugin's import, as the audit log holds it. */
export interface EarlierImport {
  readonly id: number;
  readonly at: string;
  readonly source: string;
}

export interface ImportOutcome {
  /** The changes, in the order made (or, in a dry run, that would be made). */
  readonly changes: readonly string[];
  /** Parts of the plan left out against flowgate's current state (a password of a user holding tokens). */
  readonly kept: readonly string[];
  /** Parts of the plan flowgate's current state refuses (a service account's admin flag, a password of someone who signs in through OIDC). */
  readonly notImported: readonly string[];
  /** The last apply of this plugin's import, when there was one. */
  readonly earlier?: EarlierImport;
  /** Whether the changes were written: never in a dry run, nor after an earlier apply without `force`. */
  readonly applied: boolean;
}

/** The audit log's last `import.apply` of the plugin `plan` comes from (its target is the plan's source). */
export async function earlierImport(plan: Pick<ImportPlan, 'source'>, s: Pick<ImportStore, 'audit'>): Promise<EarlierImport | undefined> {
  const plugin = pluginOfSource(plan.source);
  const [last] = await s.audit.search({ actor: '', action: 'import.apply', target: plugin }, 1);
  return last === undefined ? undefined : { id: last.id, at: last.at, source: last.target };
}

/**
 * Applies the plan in one transaction: all of it or nothing. Only what differs from the store is
 * written; nothing flowgate holds is removed or lowered except a grant the plan sets to another level.
 *
 * Once an import of the plugin has been applied (an `import.apply` in the audit log), a run that would
 * change anything writes nothing unless `force`: the diff sees only flowgate's state now, so what it
 * would add is just as well what was taken away since (a user SCIM or an administrator deleted, a grant
 * revoked or lowered), and applying it again would undo that. A dry run still shows the changes.
 */
export async function applyPlan(plan: ImportPlan, s: ImportStore, o: ApplyOptions): Promise<ImportOutcome> {
  const run = async (): Promise<ImportOutcome> => {
    const earlier = await earlierImport(plan, s);
    const { changes, kept, notImported } = await diff(plan, s, o);
    const held = earlier !== undefined && o.force !== true;
    const applied = !o.dryRun && !held && changes.length > 0;
    if (applied) {
      for (const c of changes) await c.apply();
      await s.audit.record({
        actor: o.actor,
        action: 'import.apply',
        target: plan.source,
        newValue: { changes: changes.length, ...(earlier !== undefined ? { forced: true, earlier: earlier.id } : {}) },
      });
    }
    return { changes: changes.map((c) => c.line), kept, notImported, ...(earlier !== undefined ? { earlier } : {}), applied };
  };
  // The diff is read inside the transaction too, so what it compared against cannot change under it.
  return o.dryRun ? run() : s.sql.transaction(run);
}

async function diff(plan: ImportPlan, s: ImportStore, o: ApplyOptions): Promise<{ changes: Change[]; kept: string[]; notImported: string[] }> {
  const actor = o.actor;
  const changes: Change[] = [];
  const kept: string[] = [];
  const notImported: string[] = [];
  const userId = async (name: string) => (await s.directory.userByName(name))!.id;
  const groupId = async (name: string) => (await s.directory.groupByName(name))!.id;
  const granteeOf = async (g: PlanGrantee): Promise<Grantee> => (g.type === 'user' ? { type: 'user', id: await userId(g.name) } : { type: 'group', id: await groupId(g.name) });
  const named = async (g: PlanGrantee) => ({ grantee: await granteeOf(g), name: g.name });

  // A new name is checked in any case under the lock sign-in and SCIM hold to make one (src/principals/directory.ts).
  if (!o.dryRun) await s.directory.lockUserNames();
  const newNames = new Map<string, string>();
  for (const u of plan.users) {
    const existing = await s.directory.userByName(u.username);
    if (!existing) {
      // refusals.ts leaves such names out of the plan; here they only arrive made since, or in a plan made without it.
      const problem = usernameProblem(u.username);
      if (problem !== undefined) throw new Error(`user ${JSON.stringify(u.username)} is not a name flowgate takes (${problem})`);
      const other = (await s.directory.usersByNameIgnoringCase(u.username))[0]?.username ?? newNames.get(u.username.toLowerCase());
      if (other !== undefined) throw new Error(`user ${u.username}: flowgate has '${other}', the same name in another case`);
      newNames.set(u.username.toLowerCase(), u.username);
      // The admin API's rule: a service account is never an administrator, and never signs in.
      const isAdmin = u.isAdmin && !u.isServiceAccount;
      if (u.isAdmin && u.isServiceAccount) notImported.push(`administrator rights of service account ${u.username} (a flowgate service account is never an administrator)`);
      const signIn = u.isServiceAccount ? 'local' : (u.signIn ?? 'local');
      changes.push({
        line: `+ user ${u.username}${isAdmin ? ' (administrator)' : ''}${u.isServiceAccount ? ' (service account)' : ''}${signIn === 'oidc' ? ' (signs in through OIDC)' : ''}`,
        apply: () => s.principalWriter.createUser(actor, { username: u.username, displayName: u.displayName ?? u.username, isAdmin, isServiceAccount: u.isServiceAccount, signIn }),
      });
    } else if (u.isAdmin && !existing.isAdmin) {
      if (existing.isServiceAccount) notImported.push(`administrator rights of user ${u.username} (flowgate's ${u.username} is a service account, which is never an administrator)`);
      else changes.push({ line: `~ user ${u.username}: administrator`, apply: () => s.principalWriter.updateUser(actor, existing, existing.displayName, true) });
    }
    if (u.passwordHash === undefined) continue;
    if (existing ? existing.isServiceAccount : u.isServiceAccount) {
      notImported.push(`password of ${u.username}: a service account (it authenticates with access tokens only)`);
      continue;
    }
    if (existing ? existing.signIn === 'oidc' || existing.oidcSubject !== null : u.signIn === 'oidc') {
      notImported.push(`password of ${u.username}: they sign in through the identity provider (a password would let HTTP Basic past it)`);
      continue;
    }
    if (existing && (await s.passwords.hasTokens(existing.id))) {
      kept.push(`password of ${u.username}: they hold flowgate tokens already, which retire it`);
      continue;
    }
    if (existing && (await s.passwords.hashOf(existing.id)) === u.passwordHash) continue;
    const hash = u.passwordHash;
    changes.push({
      line: `+ password of ${u.username} (${hashKind(hash)})`,
      apply: async () => {
        await s.passwords.set(await userId(u.username), hash, plan.source);
        // Never the hash: that the password came over, and from where, is what the log needs.
        await s.audit.record({ actor, action: 'user.legacy-password', target: `user:${u.username}`, newValue: { source: plan.source } });
      },
    });
  }

  // Every group the plan names that flowgate already has: merged only when asked, and every line touching one says so.
  const existingGroup = new Map<string, string>();
  const groupNames = new Set([...plan.groups.map((g) => g.name), ...[...plan.grants, ...plan.patterns].flatMap((x) => (x.grantee.type === 'group' ? [x.grantee.name] : []))]);
  const storeGroups = await s.directory.listGroups();
  for (const name of groupNames) {
    const group = storeGroups.find((g) => g.name === name);
    if (group === undefined) {
      const problem = groupNameProblem(name);
      if (problem !== undefined) throw new Error(`group ${JSON.stringify(name)} is not a name flowgate takes (${problem})`);
      const other = storeGroups.find((g) => g.name.toLowerCase() === name.toLowerCase());
      if (other !== undefined) throw new Error(`group ${name}: flowgate has '${other.name}', the same name in another case`);
      continue;
    }
    const own = await madeBy(s.audit, group, actor);
    if (o.mergeExisting !== true && !own)
      throw new Error(`group ${name} exists in flowgate (origin ${group.origin}): its members would gain this import's grants; --merge-existing merges into it`);
    const source = plan.groups.find((g) => g.name === name)?.members ?? [];
    const outside = (await s.directory.membersOfGroup(group.id)).filter((m) => !source.includes(m.username)).length;
    existingGroup.set(name, ` (${own ? 'made by an earlier import' : 'existing group'}, ${outside} members not in source)`);
  }
  const tagOf = (g: PlanGrantee) => (g.type === 'group' ? (existingGroup.get(g.name) ?? '') : '');

  for (const g of plan.groups) {
    const group = await s.directory.groupByName(g.name);
    if (!group) changes.push({ line: `+ group ${g.name}`, apply: () => s.principalWriter.createGroup(actor, g.name) });
    const members = group ? new Set((await s.directory.membersOfGroup(group.id)).map((m) => m.username)) : new Set<string>();
    for (const m of g.members) {
      // A service account joins no group (the admin API and SCIM refuse it). The plan leaves such
      // memberships out and gives what they carried as grants of the account's own (refusals.ts); here
      // one only arrives from a service account made since, or a plan made without refusals.
      const holder = await s.directory.userByName(m);
      if (holder ? holder.isServiceAccount : plan.users.some((u) => u.username === m && u.isServiceAccount))
        throw new Error(`member ${m} of group ${g.name}: ${m} is a service account, which joins no group in flowgate`);
      if (!members.has(m))
        changes.push({
          line: `+ member ${m} of group ${g.name}${tagOf({ type: 'group', name: g.name })}`,
          apply: async () => s.principalWriter.addMember(actor, (await s.directory.groupByName(g.name))!, (await s.directory.userByName(m))!),
        });
    }
  }

  for (const g of plan.grants) {
    const current = await currentGrant(s, g.grantee, (grantee) => s.grants.get(grantee, g.kind, g.id));
    if (current === g.permission) continue;
    const ref = { kind: g.kind, id: g.id } as Parameters<GrantWriter['create']>[2];
    changes.push(
      current === undefined
        ? { line: `+ grant ${granteeText(g.grantee)}: ${g.permission} on ${g.kind} ${g.id}${tagOf(g.grantee)}`, apply: async () => s.grantWriter.create(actor, await named(g.grantee), ref, g.permission) }
        : {
            line: `~ grant ${granteeText(g.grantee)}: ${current} → ${g.permission} on ${g.kind} ${g.id}${tagOf(g.grantee)}`,
            apply: async () => s.grantWriter.update(actor, await named(g.grantee), ref, current, g.permission),
          },
    );
  }

  for (const p of plan.patterns) {
    const current = await currentGrant(s, p.grantee, (grantee) => s.patterns.get(grantee, p.kind, p.pattern));
    if (current === p.permission) continue;
    changes.push({
      line: `${current === undefined ? '+' : '~'} pattern ${granteeText(p.grantee)}: ${current === undefined ? '' : `${current} → `}${p.permission} on every ${p.kind} matching ${p.pattern}${tagOf(p.grantee)}`,
      apply: async () => s.patternWriter.set(actor, await named(p.grantee), p.kind, p.pattern, p.permission),
    });
  }
  return { changes, kept, notImported };
}

/**
 * The method werkzeug writes in front of a hash (`scrypt`, `pbkdf2`, `plain`), for the plan's line; a
 * hash without one (a bare digest, a secret stored as it is) would otherwise be printed whole.
 */
function hashKind(hash: string): string {
  return /^([A-Za-z0-9]{1,16})[:$]/.exec(hash)?.[1] ?? 'unknown kind';
}

/** The grantee's permission now; undefined when they hold none or do not exist yet. */
async function currentGrant<P>(s: ImportStore, who: PlanGrantee, read: (g: Grantee) => Promise<P | undefined>): Promise<P | undefined> {
  const found = who.type === 'user' ? await s.directory.userByName(who.name) : await s.directory.groupByName(who.name);
  return found ? read({ type: who.type, id: found.id }) : undefined;
}
