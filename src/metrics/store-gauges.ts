import { Gauge, type Registry } from 'prom-client';
import type { Sql } from '../store/sql.js';

/**
 * How old the store sizes a scrape reports may be. Each size is a COUNT over a whole table (about
 * 10 ms each at a million grants, and synchronous on SQLite, so it holds every request meanwhile):
 * however many scrapers call, the store is counted at most once in this time.
 */
export const STORE_GAUGES_MAX_AGE_MS = 15_000;

/**
 * Policy store sizes, counted when Prometheus scrapes, at most once every `maxAgeMs`: a scrape
 * within that time of the last count reports its values, and scrapes arriving while a count runs
 * share it. A store that cannot answer (closed at shutdown) leaves the gauges at their last values
 * instead of failing the scrape, and is asked again only after `maxAgeMs` too.
 */
export function registerStoreGauges(
  registry: Registry,
  sql: Sql,
  now: () => number = Date.now,
  maxAgeMs: number = STORE_GAUGES_MAX_AGE_MS,
): void {
  const gauges: Array<{ name: string; help: string; sql: string; param?: () => number }> = [
    { name: 'flowgate_store_users', help: 'Users (people and service accounts) in the policy store.', sql: 'SELECT count(*) AS n FROM users' },
    { name: 'flowgate_store_groups', help: 'Groups in the policy store.', sql: 'SELECT count(*) AS n FROM groups' },
    { name: 'flowgate_store_grants', help: 'Permission grants (user and group) in the policy store.', sql: 'SELECT count(*) AS n FROM grants' },
    {
      name: 'flowgate_store_active_tokens',
      help: 'Access tokens neither revoked nor expired.',
      sql: 'SELECT count(*) AS n FROM access_tokens WHERE revoked_at IS NULL AND expires_at > ?',
      param: now,
    },
  ];
  const values = new Map<string, number>();
  let countedAt: number | undefined;
  let counting: Promise<void> | undefined;

  async function countAll(): Promise<void> {
    for (const g of gauges) {
      try {
        const row = await sql.get<{ n: number }>(g.sql, g.param ? [g.param()] : []);
        if (row) values.set(g.name, Number(row.n));
      } catch {
        // keep the last value
      }
    }
  }

  /** The sizes, counted again only when the last count is older than maxAgeMs. */
  function fresh(): Promise<void> {
    if (counting) return counting;
    const t = now();
    if (countedAt !== undefined && t - countedAt < maxAgeMs) return Promise.resolve();
    countedAt = t;
    counting = countAll().finally(() => {
      counting = undefined;
    });
    return counting;
  }

  for (const g of gauges) {
    new Gauge({
      name: g.name,
      help: g.help,
      registers: [registry],
      async collect() {
        await fresh();
        const n = values.get(g.name);
        if (n !== undefined) this.set(n);
      },
    });
  }
}
