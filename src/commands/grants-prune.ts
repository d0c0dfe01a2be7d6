import { parseArgs } from 'node:util';
import { createAuditLog } from '../audit/audit-log.js';
import { createGrantWriter } from '../authz/grant-writer.js';
import { createGrantsRepo } from '../authz/grants-repo.js';
import { mlflowExistence, pruneOrphanGrants } from '../authz/orphan-grants.js';
import type { Config } from '../config.js';
import { openStore } from '../store/store.js';
import { createUpstreamJson } from '../upstream/json-client.js';
import { connectMlflow } from '../upstream/mlflow-connection.js';

const USAGE = 'usage: flowgate grants prune --store [--dry-run] [--json]   (without --store: through the running flowgate)\n';

/**
 * `flowgate grants prune --store`: removes the grants of experiments, models and prompts MLflow no longer
 * has (after `mlflow gc`). Works on the configured store and MLflow; running flowgates on the same
 * store pick the change up through its change log (without `--store` the running flowgate does it: `permissions/grants/prune`). Exit 0 done, 1 MLflow could not answer for some
 * resources (they were kept), 2 usage.
 */
export async function runGrantsPrune(args: string[], config: Config, out: (text: string) => void, err: (text: string) => void): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args, options: { 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } }, strict: true, allowPositionals: false }));
  } catch (e) {
    err(`flowgate: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  const store = await openStore({ dbPath: config.dbPath, databaseUrl: config.databaseUrl, watchMs: 0, postgres: config.postgres });
  const sql = store.sql;
  const mlflow = connectMlflow({ upstreamUrl: config.upstreamUrl, staticPrefix: config.upstreamStaticPrefix, timeoutMs: config.upstreamTimeoutMs });
  try {
    const grants = createGrantsRepo(sql);
    const writer = createGrantWriter({ sql, grants, audit: createAuditLog(sql), grantsChanged: async () => undefined });
    const report = await pruneOrphanGrants({
      grants,
      writer,
      exists: mlflowExistence(createUpstreamJson(mlflow)),
      actor: 'flowgate grants prune',
      dryRun: values['dry-run'] === true,
    });
    const name = (r: { kind: string; id: string }) => `${r.kind}:${r.id}`;
    if (values.json) out(`${JSON.stringify({ checked: report.checked, orphans: report.orphans.map(name), unknown: report.unknown.map(name), dry_run: values['dry-run'] === true })}\n`);
    else {
      const verb = values['dry-run'] ? 'would prune' : 'pruned';
      for (const ref of report.orphans) out(`${verb}\t${name(ref)}\n`);
      for (const ref of report.unknown) out(`kept (MLflow did not answer)\t${name(ref)}\n`);
      out(`${report.checked} resources checked, ${report.orphans.length} ${verb}, ${report.unknown.length} unknown\n`);
    }
    return report.unknown.length > 0 ? 1 : 0;
  } finally {
    await mlflow.close();
    await store.close();
  }
}
