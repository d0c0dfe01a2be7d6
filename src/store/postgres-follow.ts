import pg from 'pg';
import type { ResourceKind, ResourceRef } from '../authz/types.js';
import type { Following, StoreChangeListener } from './changes.js';
import type { MappingChange } from './mapping-changes.js';
import { clientConfig, type PostgresOptions, type TimedQuery } from './postgres-sql.js';

const CHANNEL = 'flowgate_store';

type Notice =
  | { readonly generation: number; readonly table: string }
  | { readonly grant: readonly [ResourceKind, string] }
  | { readonly session: string }
  | { readonly mapping: readonly [MappingChange['cache'], string] };

/**
 * Follows the shared store through LISTEN/NOTIFY. PostgreSQL delivers every notification committed
 * while the connection is up, in commit order; the policy generation each one carries is consecutive,
 * so a gap (or a lost connection) is noticed and answered by re-reading everything. A periodic
 * catch-up compares the stored generation too, should a notification go astray without a gap.
 */
export function followPostgres(
  opts: PostgresOptions,
  catchUpMs: number,
  listener: StoreChangeListener,
  onState?: (live: boolean, err?: Error) => void,
  after?: Promise<unknown>,
): Following {
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
    const c = new pg.Client(clientConfig(opts));
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

  let catchingUp = false;
  const catchUp = setInterval(() => {
    const c = client;
    // One at a time: behind an unanswered one, another would only queue on the same connection.
    if (!c || applied === undefined || catchingUp) return;
    catchingUp = true;
    const generationQuery: TimedQuery = { text: 'SELECT value FROM policy_generation WHERE id = 1', query_timeout: opts.queryTimeoutMs };
    c.query<{ value: string }>(generationQuery).then(
      (r) => {
        const stored = Number(r.rows[0]!.value);
        // Still short of what was stored a whole interval ago: not a notification on its way.
        if (staleSince !== undefined && applied !== undefined && applied < staleSince) everythingStale(stored);
        staleSince = applied !== undefined && stored > applied ? stored : undefined;
      },
      // No answer at all (a frozen server) is a lost feed: reconnect, and re-read everything once back.
      (err: Error) => {
        if (err.message === 'Query read timeout') down(c, err);
      },
    ).finally(() => {
      catchingUp = false;
    });
  }, catchUpMs);
  catchUp.unref();

  // Connecting re-reads everything: not while the caller's own first read (`after`) is under way.
  const started = after === undefined ? connect() : after.then(connect, connect);
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
