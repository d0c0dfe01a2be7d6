import { parseArgs } from 'node:util';
import { createAuditLog } from '../audit/audit-log.js';
import { clusterNamesOf } from '../bearer/cluster-names.js';
import { createGrantWriter } from '../authz/grant-writer.js';
import { createGrantsRepo } from '../authz/grants-repo.js';
import { createPatternGrantsRepo } from '../authz/pattern-grants-repo.js';
import { createPatternWriter } from '../authz/pattern-writer.js';
import type { Config } from '../config.js';
import { applyPlan, type ImportStore } from '../import/apply-plan.js';
import type { ImportPlan } from '../import/plan.js';
import { PLUGIN_DEFAULT_PERMISSION, PLUGINS, readSource, type PlanOptions, type Plugin } from '../import/plugins.js';
import { refusalsFor, storeNamesFor } from '../import/refusals.js';
import { createDirectory } from '../principals/directory.js';
import { createPrincipalWriter } from '../principals/principal-writer.js';
import { isPermission } from '../resources/permissions.js';
import type { Sql } from '../store/sql.js';
import { openStore } from '../store/store.js';
import { createLegacyPasswordRepo } from '../tokens/legacy-password-repo.js';

const USAGE =
  `usage: flowgate import ${PLUGINS.join('|')} --from DATABASE_URI [--dry-run] [--json] [--default-permission READ] [--merge-existing] [--force]\n` +
  '  DATABASE_URI: the plugin\'s own database, as it is configured: sqlite:///PATH or postgresql://USER:PASSWORD@HOST/DB\n' +
  '  --default-permission: the plugin\'s default permission: basic-auth\'s default_permission (its ini file; READ unless\n' +
  '    changed), mlflow-oidc-auth\'s DEFAULT_MLFLOW_PERMISSION (NO_PERMISSIONS unless changed)\n' +
  '  mlflow-oidc-auth: users, groups and their members, user and group grants, regex rules as pattern grants where a\n' +
  '    glob is exact (`^team-a-.*$` → `team-a-*`); every other rule is listed as `not imported:` and never widened\n' +
  '  --merge-existing: a source role or group whose name flowgate already has (made by SCIM, a sign-in or an\n' +
  "    administrator) takes the source's members and grants, so its current members gain the source's grants and the\n" +
  "    source's members its grants; without it such a group is listed as `not imported:` (its members get what the\n" +
  '    plugin answered them as grants of their own, or are denied, never widened)\n' +
  "  --force: apply though this plugin's import was applied to the store before (an import.apply in the audit log).\n" +
  "    A second run compares with flowgate's state now, so it would bring back users, grants and levels removed or\n" +
  '    lowered since: without --force it writes nothing (exit 1) and prints what it would change, as --dry-run does\n';

export interface ImportIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
}

/** The store's writers with no running flowgate to tell: flowgates on the store follow its change log. */
export function importStore(sql: Sql, bootstrapAdmin: string | undefined): ImportStore {
  const audit = createAuditLog(sql);
  const directory = createDirectory(sql);
  const grants = createGrantsRepo(sql);
  const patterns = createPatternGrantsRepo(sql);
  return {
    sql,
    directory,
    grants,
    patterns,
    passwords: createLegacyPasswordRepo(sql),
    principalWriter: createPrincipalWriter({ sql, directory, audit, bootstrapAdmin }),
    grantWriter: createGrantWriter({ sql, grants, audit, grantsChanged: async () => undefined }),
    patternWriter: createPatternWriter({ sql, patterns, audit, patternsChanged: async () => undefined }),
    audit,
  };
}

const heldText = (earlier: string) =>
  `flowgate import: this plugin's import was applied to the store before: ${earlier}. ` +
  'The changes above compare with flowgate as it is now, so they would also re-create users and grants deleted, and raise levels lowered, since then. ' +
  'Nothing was written: check them, then run again with --force to apply them.\n';

/**
 * `flowgate import mlflow-basic-auth|mlflow-oidc-auth --from URI`: reads the plugin's database,
 * prints the plan (what it adds, what it cannot translate exactly and leaves out) and applies it to
 * the store FLOWGATE_* configures in one transaction. Exit 0 done (or planned), 1 failed (nothing
 * written), 2 usage.
 */
export async function runImport(argv: string[], config: Config, io: ImportIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        from: { type: 'string' },
        'dry-run': { type: 'boolean' },
        json: { type: 'boolean' },
        'default-permission': { type: 'string' },
        'merge-existing': { type: 'boolean' },
        force: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    });
  } catch (e) {
    io.err(`flowgate: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const plugin = positionals[0] as Plugin | undefined;
  if (plugin === undefined || !PLUGINS.includes(plugin) || positionals.length > 1 || !values.from) {
    io.err(`flowgate: name the plugin and its database\n${USAGE}`);
    return 2;
  }
  const mlflowDefault = (values['default-permission'] ?? PLUGIN_DEFAULT_PERMISSION[plugin]).toUpperCase();
  if (!isPermission(mlflowDefault)) {
    io.err(`flowgate: --default-permission must be READ, USE, EDIT, MANAGE or NO_PERMISSIONS\n${USAGE}`);
    return 2;
  }
  const dryRun = values['dry-run'] === true;
  const mergeExisting = values['merge-existing'] === true;
  const force = values.force === true;
  const options: PlanOptions = { mlflowDefault, flowgateDefault: config.defaultPermission, oidcSignIn: config.oidc !== undefined };
  let planWith: (o: PlanOptions) => ImportPlan;
  let whole: ImportPlan;
  try {
    planWith = await readSource(plugin, values.from);
    whole = planWith(options);
  } catch (e) {
    io.err(`flowgate import: ${(e as Error).message}\n`);
    return 1;
  }
  const store = await openStore({ dbPath: config.dbPath, databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres });
  try {
    const target = importStore(store.sql, config.admin?.username);
    const actor = `flowgate import ${plugin}`;
    // The store decides which of the source's names the plan may use (refusals.ts); the plan is then made without the rest.
    const refused = refusalsFor(whole, await storeNamesFor(whole, target, actor), { mergeExisting, bootstrapAdmin: config.admin?.username, clusterNames: clusterNamesOf(config.bearer) });
    const plan = refused.users.size + refused.groups.size + (refused.serviceAccounts?.size ?? 0) === 0 ? whole : planWith({ ...options, refused });
    const outcome = await applyPlan(plan, target, { actor, dryRun, mergeExisting, force });
    const notImported = [...plan.notImported, ...outcome.notImported];
    // Applied before and not forced: what the run would change is shown, nothing is written.
    const held = !dryRun && !outcome.applied && outcome.changes.length > 0;
    const earlier = outcome.earlier && `${outcome.earlier.source} on ${outcome.earlier.at} (audit entry ${outcome.earlier.id})`;
    if (values.json) {
      io.out(
        `${JSON.stringify({
          source: plan.source,
          dry_run: dryRun,
          applied: outcome.applied,
          ...(outcome.earlier ? { imported_before: outcome.earlier } : {}),
          changes: outcome.changes,
          not_imported: notImported,
          kept: outcome.kept,
          notes: plan.notes,
        })}\n`,
      );
      if (held) io.err(heldText(earlier!));
      return held ? 1 : 0;
    }
    io.out(`# ${plan.source} → ${store.location}${dryRun ? ' (dry run: nothing written)' : held ? ' (imported before: nothing written)' : ''}\n`);
    if (earlier !== undefined) io.out(`# imported before: ${earlier}; applying changes again takes --force\n`);
    for (const c of outcome.changes) io.out(`${c}\n`);
    for (const n of notImported) io.out(`not imported: ${n}\n`);
    for (const k of outcome.kept) io.out(`kept: ${k}\n`);
    for (const n of plan.notes) io.out(`note: ${n}\n`);
    if (held) {
      io.err(heldText(earlier!));
      return 1;
    }
    const count = outcome.changes.length;
    io.err(count === 0 ? 'no changes: flowgate already holds everything this import brings\n' : `${count} ${dryRun ? 'changes (dry run: none applied)' : 'changes applied in one transaction'}\n`);
    return 0;
  } catch (e) {
    io.err(`flowgate import: ${(e as Error).message} (nothing was written)\n`);
    return 1;
  } finally {
    await store.close();
  }
}
