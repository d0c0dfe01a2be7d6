import { shownUrl } from '../shown-url.js';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Config } from '../config.js';
import { openSqliteSnapshot, openSqliteStore } from '../store/database.js';
import { copyStore, TargetNotEmptyError } from '../store/copy.js';
import type { Sql } from '../store/sql.js';
import { openStore, redactedUrl } from '../store/store.js';

const USAGE =
  'usage: flowgate store copy --from sqlite:PATH [--to postgres://USER:PASSWORD@HOST:PORT/DATABASE] [--json]\n' +
  '  --to defaults to the store flowgate serves from (FLOWGATE_DATABASE_URL or FLOWGATE_DATABASE_URL_FILE),\n' +
  '  which keeps the password off the command line\n';

/** A command line this command cannot follow (exit 2). */
class UsageError extends Error {}

interface Opened {
  readonly sql: Sql;
  readonly name: string;
  close(): Promise<void>;
}

/** `postgres`: how flowgate reaches PostgreSQL (its CA: verified TLS; its timeouts), from the validated config. */
async function openLocation(location: string, side: 'from' | 'to', postgres: Config['postgres']): Promise<Opened> {
  if (location.startsWith('sqlite:')) {
    const path = location.slice('sqlite:'.length);
    // Opening a mistyped source would create it empty: 0 rows copied, "verified", exit 0.
    if (side === 'from' && !existsSync(path)) throw new UsageError(`--from names no store: there is no file ${JSON.stringify(path)}`);
    // The source is read from a snapshot: the file itself is neither migrated nor locked for the copy.
    const sql = side === 'from' ? await openSqliteSnapshot(path) : openSqliteStore(path);
    return { sql, name: location, close: () => sql.close() };
  }
  if (/^postgres(ql)?:\/\//.test(location)) {
    const store = await openStore({ dbPath: '', databaseUrl: location, watchMs: 0, postgres });
    return { sql: store.sql, name: redactedUrl(location), close: () => store.close() };
  }
  throw new Error(`'${shownUrl(location, location.includes('@') ? '(a location)' : location)}' is neither sqlite:PATH nor postgres://…`);
}

/**
 * `flowgate store copy`: moves a store (SQLite to PostgreSQL, or back) into a new, empty one, in one
 * transaction, and verifies it by counting every table on both sides. A SQLite source is copied from
 * a snapshot, left as it was (an older flowgate serving from it keeps its schema); changes made after
 * the snapshot are not copied, so stop flowgates writing to the source first. A PostgreSQL side is
 * reached as `serve` reaches the store: `postgres` is the validated config's (FLOWGATE_DATABASE_CA_FILE:
 * verified TLS). Without `--to` the target is `configuredUrl`, the store `serve` would use: in a pod its
 * URL is a mounted file, and a password typed as an argument is visible to every process list.
 * Exit 0 copied and verified, 1 failed (nothing was written), 2 usage (a source SQLite file that does
 * not exist included).
 */
export async function runStoreCopy(
  args: string[],
  out: (text: string) => void,
  err: (text: string) => void,
  postgres: Config['postgres'],
  configuredUrl?: string,
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({ args, options: { from: { type: 'string' }, to: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, strict: true }));
  } catch (e) {
    err(`flowgate: ${(e as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    out(USAGE);
    return 0;
  }
  const target = values.to ?? configuredUrl;
  if (!values.from) {
    err(`flowgate: --from is required\n${USAGE}`);
    return 2;
  }
  if (!target) {
    err(`flowgate: --to is required when neither FLOWGATE_DATABASE_URL nor FLOWGATE_DATABASE_URL_FILE is set\n${USAGE}`);
    return 2;
  }
  let from: Opened | undefined;
  let to: Opened | undefined;
  try {
    from = await openLocation(values.from, 'from', postgres);
    to = await openLocation(target, 'to', postgres);
    const report = await copyStore(from.sql, to.sql);
    if (values.json) out(`${JSON.stringify({ from: from.name, to: to.name, ...report })}\n`);
    else {
      out(`copied ${from.name} to ${to.name}\n`);
      const width = Math.max(...report.tables.map((r) => r.table.length));
      for (const r of report.tables) out(`  ${r.table.padEnd(width)} ${String(r.source).padStart(8)} → ${String(r.target).padStart(8)}${r.source === r.target ? '' : '  MISMATCH'}\n`);
      out(report.verified ? 'verified: every table holds as many rows as its source\n' : 'NOT verified: counts differ\n');
    }
    return report.verified ? 0 : 1;
  } catch (e) {
    if (e instanceof UsageError) {
      err(`flowgate store copy: ${e.message}\n${USAGE}`);
      return 2;
    }
    const message = e instanceof TargetNotEmptyError ? e.message : (e as Error).message;
    err(`flowgate store copy: ${message}\n`);
    return 1;
  } finally {
    await from?.close();
    await to?.close();
  }
}
