import pg from 'pg';
import type { ResourceKind, ResourceRef } from '../authz/types.js';
import type { Following, StoreChangeListener } from './changes.js';
import type { MappingChange } from './mapping-changes.js';
import { clientConfig, type PostgresOptions, type TimedQuery } from './postgres-sql.js';

const CHANNEL = 'flowgate_store';
/** Idle time before the listener's socket is probed by TCP: a peer gone without a reset is found. */
const KEEP_ALIVE_IDLE_MS = 10_000;
/**
 * The listener is asked to answer once every this many catch-up intervals. A silent listener loses
 * nothing while nothing changes, and a change it misses is found by the pool's read within two intervals
 * whatever this is; the probe only keeps `live()` honest in quiet times, so it need not cost a query a second.
 */
const PROBE_EVERY_INTERVALS = 10;

type Notice =
  | { readonly generation: number; readonly table: string }
  | { readonly grant: readonly [ResourceKind, string] }
  | { readonly session: string }
  | { readonly mapping: readonly [MappingChange['cache'], string] };

export interface FollowOptions {
  /** How often the stored generation is compared with what was heard, and the listener asked to answer. */
  readonly catchUpMs: number;
  /** The stored policy generation, read through the pool (never the listener). */
  readonly storedGeneration: () => Promise<number>;
  readonly onState?: (live: boolean, err?: Error) => void;
  /** Connect (and re-read everything) once this settles: not during the caller's own first read. */
  readonly after?: Promise<unknown> | undefined;
}

/** The listener's name in `pg_stat_activity`, apart from the pool's `flowgate`. */
export const LISTENER_NAME = 'flowgate-listener';

/**
 * Follows the shared store through LISTEN/NOTIFY. PostgreSQL delivers every notification committed
 * while the connection is up, in commit order; the policy generation each one carries is consecutive,
 * so a gap (or a lost connection) is noticed and answered by re-reading everything.
 *
 * A listener can also go quiet without a gap or an error: its backend frozen, the connection dropped
 * by the network without a reset. So every interval the stored generation is read through the pool;
 * still behind what was stored an interval ago, this process re-reads everything and replaces the
 * listener. The listener must also answer a query within the query timeout (asked every tenth interval),
 * and has TCP keep-alive. While the listener is down and reconnecting, the same read re-reads
 * everything at each interval in which the store moved.
 */
export function followPostgres(opts: PostgresOptions, listener: StoreChangeListener, o: FollowOptions): Following {
  const { catchUpMs, onState } = o;
  let client: pg.Client | undefined;
  let applied: number | undefined;
  let pendingGrants: ResourceRef[] = [];
  let staleSince: number | undefined;
  let stopped = false;
  let retryMs = 250;
  let retryTimer: NodeJS.Timeout | undefined;

  function everythingStale(generation: number): void {
    pendingGrants = [];
    applied = generation;
    staleSince = undefined;
    listener.principals();
    listener.sessionsEnded('all');
    listener.mappings('all');
    listener.patterns();
    listener.grants('all');
  }

  function onGeneration(generation: number, table: string): void {
    if (applied === undefined || generation <= applied) {
      pendingGrants = [];
      return;
    }
    if (generation !== applied + 1) return everythingStale(generation);
    applied = generation;
    if (table === 'grants') {
      const refs = pendingGrants;
      pendingGrants = [];
      listener.grants(refs);
    } else if (table === 'pattern_grants') listener.patterns();
    else listener.principals();
  }

  function onNotification(msg: pg.Notification): void {
    if (msg.channel !== CHANNEL || msg.payload === undefined) return;
    try {
      const n = JSON.parse(msg.payload) as Notice;
      if ('generation' in n) onGeneration(Number(n.generation), n.table);
      else if ('grant' in n) pendingGrants.push({ kind: n.grant[0], id: n.grant[1] } as ResourceRef);
      else if ('session' in n) listener.sessionsEnded([n.session]);
      else if ('mapping' in n) listener.mappings([{ cache: n.mapping[0], key: n.mapping[1] }]);
    } catch {
      // Thrown inside pg's socket handler, this would end the process; a notice not understood may be a change missed.
      if (applied !== undefined) everythingStale(applied);
    }
  }

  function down(c: pg.Client, err?: Error): void {
    if (client !== c) return;
    client = undefined;
    c.removeAllListeners('notification');
    void c.end().catch(() => undefined);
    onState?.(false, err);
    scheduleConnect();
  }

  function scheduleConnect(): void {
    if (stopped || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect();
    }, retryMs);
    retryTimer.unref();
    retryMs = Math.min(retryMs * 2, 5000);
  }

  async function connect(): Promise<void> {
    const c = new pg.Client({ ...clientConfig(opts), application_name: LISTENER_NAME, keepAlive: true, keepAliveInitialDelayMillis: KEEP_ALIVE_IDLE_MS });
    c.on('error', (err) => down(c, err));
    c.on('end', () => down(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANNEL}`);
      c.on('notification', onNotification);
      const generation = Number((await c.query<{ value: string }>('SELECT value FROM policy_generation WHERE id = 1')).rows[0]!.value);
      if (stopped) return void (await c.end());
      client = c;
      retryMs = 250;
      // Whatever committed before LISTEN took hold (since start, or while cut off) was not heard.
      everythingStale(generation);
      onState?.(true);
    } catch (err) {
      c.removeAllListeners();
      c.on('error', () => undefined);
      void c.end().catch(() => undefined);
      onState?.(false, err as Error);
      scheduleConnect();
    }
  }

  let probing = false;
  /** A listener that cannot answer a query hears no notification either: replaced. */
  function probe(c: pg.Client): void {
    // One at a time: behind an unanswered one, another would only queue on the same connection.
    if (probing) return;
    probing = true;
    const query: TimedQuery = { text: 'SELECT 1', query_timeout: opts.queryTimeoutMs };
    c.query(query)
      .then(
        () => undefined,
        (err: Error) => {
          if (err.message === 'Query read timeout') down(c, err);
        },
      )
      .finally(() => {
        probing = false;
      });
  }

  let checking = false;
  let intervals = 0;
  const catchUp = setInterval(() => {
    const c = client;
    if (applied === undefined) return;
    if (c && ++intervals % PROBE_EVERY_INTERVALS === 0) probe(c);
    if (checking) return;
    checking = true;
    o.storedGeneration()
      .then(
        (stored) => {
          if (client !== c || applied === undefined) return;
          /*
           * No listener (PostgreSQL refusing new connections while the pool's open ones still work): no
           * notification is on its way, so whatever was stored since is dropped from the caches at once,
           * or a revoke made through another replica would be honoured here for the whole outage.
           */
          if (!c) {
            if (stored > applied) everythingStale(stored);
            return;
          }
          // Still short of what was stored a whole interval ago: not a notification on its way.
          if (staleSince !== undefined && applied < staleSince) {
            everythingStale(stored);
            down(c, new Error('the change feed fell behind the store; listening again'));
            return;
          }
          staleSince = stored > applied ? stored : undefined;
        },
        // The pool's own failures are readiness's to report; the listener's probe covers the feed.
        () => undefined,
      )
      .finally(() => {
        checking = false;
      });
  }, catchUpMs);
  catchUp.unref();

  // Connecting re-reads everything: not while the caller's own first read (`after`) is under way.
  const started = o.after === undefined ? connect() : o.after.then(connect, connect);
  return {
    live: () => client !== undefined,
    ready: started,
    async stop() {
      stopped = true;
      clearInterval(catchUp);
      if (retryTimer) clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners();
        c.on('error', () => undefined);
        await c.end().catch(() => undefined);
      }
    },
  } as Following & { ready: Promise<void> };
}
