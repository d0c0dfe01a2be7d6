import type { Migration } from './migrations.js';
import { followPostgres } from './postgres-follow.js';
import { migratePostgres } from './postgres-migrate.js';
import { postgresSql, type PostgresOptions } from './postgres-sql.js';
import { defaultQueryTimeoutMs } from './query-timeout.js';
import { redactedUrl, type Store, type StoreOptions } from './store.js';

const DEFAULTS = { poolSize: 10, statementTimeoutMs: 5000, connectTimeoutMs: 5000 };

/** The shared store: migrated under an advisory lock, followed through LISTEN/NOTIFY. */
export async function openPostgresStore(o: StoreOptions, url: string, migrations: readonly Migration[]): Promise<Store> {
  const location = redactedUrl(url);
  const opts: PostgresOptions = {
    url,
    ...DEFAULTS,
    ...o.postgres,
    queryTimeoutMs: o.postgres?.queryTimeoutMs ?? defaultQueryTimeoutMs(o.postgres?.statementTimeoutMs ?? DEFAULTS.statementTimeoutMs),
    onPoolError: (err) => o.onError?.('PostgreSQL connection lost', err),
  };
  const sql = postgresSql(opts);
  try {
    await migratePostgres(sql.pool, location, migrations);
  } catch (e) {
    await sql.close();
    throw e;
  }
  let following: { live(): boolean } | undefined;
  return {
    sql,
    location,
    follow(listener, after) {
      const f = followPostgres(opts, listener, {
        catchUpMs: o.watchMs > 0 ? o.watchMs : 5000,
        storedGeneration: async () => Number((await sql.get<{ value: number }>('SELECT value FROM policy_generation WHERE id = 1'))?.value ?? 0),
        onState: (live, err) => {
          if (err) o.onError?.('PostgreSQL change feed lost', err);
          o.onFollowState?.(live);
        },
        after,
      });
      following = f;
      return f;
    },
    async ready() {
      try {
        await sql.ping();
        return following === undefined || following.live();
      } catch {
        return false;
      }
    },
    close: () => sql.close(),
  };
}
