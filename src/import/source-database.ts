import { existsSync } from 'node:fs';
import { redactedUrl } from '../store/store.js';

/** A plugin's database, opened read-only: the importer never writes to it. */
export interface SourceDatabase {
  /** For messages: the path, or the URL without its password. */
  readonly name: string;
  readonly tables: ReadonlySet<string>;
  all<T>(text: string): Promise<T[]>;
  close(): Promise<void>;
}

/** The database a SQLAlchemy URI (as the plugins are configured) names: `sqlite:///path` or `postgresql[+driver]://…`. */
export async function openSourceDatabase(uri: string): Promise<SourceDatabase> {
  if (uri.startsWith('sqlite:')) return openSqlite(uri);
  const pgScheme = /^postgres(?:ql)?(?:\+[a-z0-9]+)?:\/\//i;
  if (pgScheme.test(uri)) return openPostgres(uri.replace(pgScheme, 'postgresql://'));
  throw new Error(`'${uri.includes('@') ? redactedUrl(uri) : uri}' is neither sqlite:///PATH nor postgresql://…`);
}

async function openSqlite(uri: string): Promise<SourceDatabase> {
  // SQLAlchemy's form: three slashes then the path (four for an absolute one); `sqlite:PATH` accepted too.
  const path = uri.startsWith('sqlite:///') ? uri.slice('sqlite:///'.length) : uri.slice('sqlite:'.length);
  if (path === '' || !existsSync(path)) throw new Error(`no database file at '${path}'`);
  const { default: Database } = await import('better-sqlite3');
  const db = new Database(path, { readonly: true, fileMustExist: true });
  const tables = new Set(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all().map((r) => (r as { name: string }).name));
  return {
    name: path,
    tables,
    all: async <T>(text: string) => db.prepare(text).all() as T[],
    close: async () => void db.close(),
  };
}

async function openPostgres(url: string): Promise<SourceDatabase> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('SET default_transaction_read_only = on');
    const { rows } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
    );
    return {
      name: redactedUrl(url),
      tables: new Set(rows.map((r) => r.table_name)),
      all: async <T>(text: string) => (await client.query(text)).rows as T[],
      close: () => client.end(),
    };
  } catch (e) {
    await client.end();
    throw e;
  }
}
