import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResourceRef } from '../../src/authz/types.js';
import type { StoreChangeListener } from '../../src/store/changes.js';
import { SchemaTooNewError } from '../../src/store/database.js';
import { MIGRATIONS } from '../../src/store/migrations.js';
import { openStore, type Store } from '../../src/store/store.js';
import { startPostgres, type PostgresServer } from '../helpers/postgres.js';

let server: PostgresServer;
beforeAll(async () => {
  server = await startPostgres();
});
afterAll(async () => {
  await server?.stop();
});

const open = (url: string, watchMs = 200) => openStore({ dbPath: 'unused', databaseUrl: url, watchMs, postgres: { poolSize: 4, statementTimeoutMs: 2000, connectTimeoutMs: 2000 } });

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function recorder() {
  const seen = { grants: [] as Array<readonly ResourceRef[] | 'all'>, principals: 0, patterns: 0, sessions: [] as Array<readonly string[] | 'all'>, mappings: [] as unknown[] };
  const listener: StoreChangeListener = {
    grants: (g) => seen.grants.push(g),
    principals: () => seen.principals++,
    patterns: () => seen.patterns++,
    sessionsEnded: (s) => seen.sessions.push(s),
    mappings: (m) => seen.mappings.push(m),
  };
  return { seen, listener };
}

describe('the PostgreSQL store', () => {
  it('migrates once when several replicas start together, and refuses a newer schema', async () => {
    const url = await server.createDatabase();
    const stores = await Promise.all([open(url), open(url), open(url)]);
    const version = await stores[0]!.sql.get<{ version: number }>('SELECT version FROM flowgate_schema WHERE id = 1');
    expect(version?.version).toBe(MIGRATIONS.at(-1)!.version);
    await Promise.all(stores.map((s) => s.close()));

    const c = new pg.Client({ connectionString: url });
    await c.connect();
    await c.query('UPDATE flowgate_schema SET version = 999');
    await c.end();
    await expect(open(url)).rejects.toThrow(SchemaTooNewError);
  });

  it('answers numbers as numbers, ? placeholders, RETURNING, and the instr() the searches use', async () => {
    const store = await open(await server.createDatabase());
    try {
      const row = await store.sql.get<{ id: number }>(
        'INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id',
        ['alice', 'Alice', 0, 0, Date.now()],
      );
      expect(typeof row?.id).toBe('number');
      const n = await store.sql.get<{ n: number }>("SELECT count(*) AS n FROM users WHERE instr(lower(username), lower(CAST(? AS TEXT))) > 0 AND display_name <> '?'", ['LIC']);
      expect(n).toEqual({ n: 1 });
      expect(await store.sql.run('UPDATE users SET display_name = ? WHERE username = ?', ['A', 'nobody'])).toBe(0);
    } finally {
      await store.close();
    }
  });

  it('cancels a statement that runs past the statement timeout, and the pool goes on', async () => {
    const store = await openStore({ dbPath: '', databaseUrl: await server.createDatabase(), watchMs: 0, postgres: { poolSize: 1, statementTimeoutMs: 200, connectTimeoutMs: 2000 } });
    try {
      const started = Date.now();
      // A 503 for the client; the server's own words for the log.
      await expect(store.sql.get('SELECT pg_sleep(5)')).rejects.toMatchObject({ status: 503, detail: expect.stringMatching(/^57014: .*statement timeout/) });
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await store.sql.get('SELECT 1 AS one')).toEqual({ one: 1 });
    } finally {
      await store.close();
    }
  });

  it('keeps a transaction on one connection across awaits, and rolls it back on a throw', async () => {
    const store = await open(await server.createDatabase());
    try {
      const insert = (name: string) =>
        store.sql.run('INSERT INTO groups (name, created_at) VALUES (?, ?)', [name, 1]);
      // A continuation registered outside the transaction runs outside it, whenever it runs.
      let openOutside!: () => void;
      const outside = new Promise<void>((r) => (openOutside = r)).then(() => store.sql.get<{ n: number }>('SELECT count(*) AS n FROM groups'));
      await expect(
        store.sql.transaction(async () => {
          await insert('g1');
          await new Promise((r) => setTimeout(r, 10));
          openOutside();
          expect(await outside).toEqual({ n: 0 });
          expect(await store.sql.get('SELECT count(*) AS n FROM groups')).toEqual({ n: 1 });
          await store.sql.transaction(() => insert('g2'));
          throw new Error('undo');
        }),
      ).rejects.toThrow('undo');
      expect(await store.sql.get('SELECT count(*) AS n FROM groups')).toEqual({ n: 0 });
      await store.sql.transaction(async () => {
        await insert('g3');
        await insert('g4');
      });
      expect(await store.sql.get('SELECT count(*) AS n FROM groups')).toEqual({ n: 2 });
    } finally {
      await store.close();
    }
  });

  it('tells every replica what another changed: grants by resource, principals, sessions, mappings', async () => {
    const url = await server.createDatabase();
    const writer = await open(url);
    const reader = await open(url);
    const { seen, listener } = recorder();
    const following = reader.follow(listener);
    try {
      await until(() => following.live() && seen.grants.length === 1);
      expect(seen.grants[0]).toBe('all'); // what committed before LISTEN took hold
      seen.grants.length = 0;
      seen.mappings.length = 0;
      const before = seen.principals;

      const user = await writer.sql.get<{ id: number }>(
        'INSERT INTO users (username, display_name, created_at) VALUES (?, ?, ?) RETURNING id',
        ['bob', 'Bob', 1],
      );
      await until(() => seen.principals > before);
      await writer.sql.transaction(async () => {
        await writer.sql.run('INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
          'experiment', '7', user!.id, 'READ', 1, 1,
        ]);
        await writer.sql.run('INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)', [
          'registered_model', 'm', user!.id, 'EDIT', 1, 1,
        ]);
      });
      await until(() => seen.grants.length === 2);
      expect(seen.grants).toEqual([[{ kind: 'experiment', id: '7' }], [{ kind: 'registered_model', id: 'm' }]]);

      // A pattern grant is announced as such, not as a principal change.
      const patternsBefore = seen.patterns;
      const principalsBefore = seen.principals;
      await writer.sql.run(
        'INSERT INTO pattern_grants (resource_kind, pattern, user_id, permission, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
        ['experiment', 'team-a/*', user!.id, 'READ', 1, 1],
      );
      await until(() => seen.patterns > patternsBefore);
      expect(seen.principals).toBe(principalsBefore);

      // A cascade (the user deleted) announces the grants it removed.
      seen.grants.length = 0;
      await writer.sql.run('DELETE FROM users WHERE id = ?', [user!.id]);
      await until(() => seen.grants.flat().length === 2);
      expect(new Set(seen.grants.flat().map((r) => (r === 'all' ? r : r.id)))).toEqual(new Set(['7', 'm']));

      await writer.sql.run("INSERT INTO mapping_changes (cache, key) VALUES ('model', 'm')");
      await until(() => seen.mappings.length === 1);
      expect(seen.mappings[0]).toEqual([{ cache: 'model', key: 'm' }]);
    } finally {
      await following.stop();
      await Promise.all([writer.close(), reader.close()]);
    }
  });

  it('treats everything as stale after a gap in the generations, and after PostgreSQL comes back', async () => {
    const url = await server.createDatabase();
    const reader = await open(url);
    const { seen, listener } = recorder();
    const following = reader.follow(listener);
    try {
      await until(() => following.live() && seen.grants.length === 1);
      seen.grants.length = 0;
      // A generation moved without its notification (an operator's UPDATE with triggers off).
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      await c.query("SET session_replication_role = 'replica'");
      await c.query('UPDATE policy_generation SET value = value + 5');
      await c.end();
      await until(() => seen.grants.includes('all'), 3000);

      seen.grants.length = 0;
      await server.pause();
      await until(() => !following.live());
      expect(await reader.ready()).toBe(false);
      await server.start();
      await until(() => following.live(), 15_000);
      expect(seen.grants).toContain('all');
      expect(await reader.ready()).toBe(true);
    } finally {
      await following.stop();
      await reader.close();
    }
  });

  it('while the listener cannot reconnect but the pool still reads, a change stored through another replica drops everything', async () => {
    const url = await server.createDatabase();
    const db = new URL(url).pathname.slice(1);
    const reader = await open(url);
    const { seen, listener } = recorder();
    const following = reader.follow(listener);
    // Connected before new connections are refused: another replica's open pool.
    const writer = new pg.Client({ connectionString: url });
    await writer.connect();
    const admin = new pg.Client({ connectionString: server.url() });
    await admin.connect();
    try {
      await until(() => following.live() && seen.grants.length === 1);
      await reader.sql.get('SELECT 1 AS one'); // the pool holds an open connection, as a serving replica's does
      // PostgreSQL refuses new connections (a connection limit reached, a rotated password); open ones stay.
      await admin.query(`ALTER DATABASE "${db}" ALLOW_CONNECTIONS false`);
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'flowgate-listener' AND datname = $1", [db]);
      await until(() => !following.live());
      seen.grants.length = 0;
      seen.principals = 0;
      // A token revoked through the other replica: a policy change, with no one here to hear it.
      await writer.query('UPDATE policy_generation SET value = value + 1');
      // Before, the catch-up read nothing while the listener was down: the caches were kept for the whole outage.
      await until(() => seen.grants.includes('all') && seen.principals > 0, 3000);
      expect(following.live()).toBe(false);
      expect(seen.sessions).toContain('all');

      // Unchanged store: nothing more is dropped while the listener stays down.
      seen.grants.length = 0;
      await new Promise((r) => setTimeout(r, 1000));
      expect(seen.grants).toEqual([]);
    } finally {
      await admin.query(`ALTER DATABASE "${db}" ALLOW_CONNECTIONS true`);
      await admin.end();
      await writer.end();
      await following.stop();
      await reader.close();
    }
  }, 20_000);
});

export type { Store };
