import Database from 'better-sqlite3';
import { join } from 'node:path';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminAuth, basic, removeDir, startStubUpstream, startTestFlowgate, type TestFlowgate } from '../helpers/flowgate.js';
import { eventually } from '../helpers/prom.js';
import { onPostgres } from '../helpers/test-store.js';

/**
 * Two flowgate processes' worth of state on one SQLite file: what one writes, the other obeys. The
 * file, its polled watch and an operator's sqlite3 are SQLite's; PostgreSQL's change feed is shown by
 * test/store/postgres-store.test.ts and test/e2e/replicas.test.ts.
 */
const postgres = onPostgres();
let upstream: Awaited<ReturnType<typeof startStubUpstream>>;
let writer: TestFlowgate;
let reader: TestFlowgate;
let frozen: TestFlowgate;

beforeAll(async () => {
  if (postgres) return;
  upstream = await startStubUpstream(() => ({ status: 200, body: { experiment: { experiment_id: '1', name: 'team-a/one' } } }));
  writer = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_STORE_WATCH_MS: '50' });
  reader = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_STORE_WATCH_MS: '50' }, writer.dir);
  // The control: the same store, the watch turned off.
  frozen = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_STORE_WATCH_MS: '0' }, writer.dir);
});
afterAll(async () => {
  await writer?.close();
  await reader?.close();
  await frozen?.close();
  await upstream?.close();
  if (writer) removeDir(writer.dir);
});

const EXPERIMENT = '/api/2.0/mlflow/experiments/get?experiment_id=1';
const mint = async (username: string) =>
  (await request(writer.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username })).body
    .token as string;

describe.skipIf(postgres)('one SQLite policy store, several flowgate processes', () => {
  it('a grant and a token rotation made through one are obeyed by the other within its watch interval', async () => {
    expect((await request(writer.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'bob' })).status).toBe(201);
    const first = await mint('bob');
    // Both readers have now cached bob's token and found no grant.
    for (const fg of [reader, frozen]) expect((await request(fg!.url).get(EXPERIMENT).set('Authorization', basic('bob', first))).status).toBe(403);

    const granted = await request(writer.url)
      .post('/api/2.0/mlflow/permissions/users/bob/experiments/1')
      .set('Authorization', adminAuth())
      .send({ permission: 'READ' });
    expect(granted.status).toBe(201);
    await eventually(async () => expect((await request(reader.url).get(EXPERIMENT).set('Authorization', basic('bob', first))).status).toBe(200));

    const second = await mint('bob');
    await eventually(async () => expect((await request(reader.url).get(EXPERIMENT).set('Authorization', basic('bob', first))).status).toBe(401));
    expect((await request(reader.url).get(EXPERIMENT).set('Authorization', basic('bob', second))).status).toBe(200);
    expect(reader.logs.join('')).toContain('policy store changed by another process: caches dropped, grants reloaded');

    // Without the watch, the stale grant index and the revoked token's cache entry stay as they were.
    await new Promise((r) => setTimeout(r, 300));
    expect((await request(frozen.url).get(EXPERIMENT).set('Authorization', basic('bob', first))).status).toBe(403);
  });

  it('a pattern grant made through one is obeyed by the other, and so is its removal', async () => {
    expect((await request(writer.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'carol' })).status).toBe(201);
    const token = await mint('carol');
    expect((await request(reader.url).get(EXPERIMENT).set('Authorization', basic('carol', token))).status).toBe(403);
    const patterns = '/api/2.0/mlflow/permissions/users/carol/patterns';
    const granted = await request(writer.url).post(patterns).set('Authorization', adminAuth()).send({ resource_type: 'experiment', pattern: 'team-a/*', permission: 'READ' });
    expect(granted.status).toBe(201);
    await eventually(async () => expect((await request(reader.url).get(EXPERIMENT).set('Authorization', basic('carol', token))).status).toBe(200));
    const removed = await request(writer.url).delete(patterns).query({ resource_type: 'experiment', pattern: 'team-a/*' }).set('Authorization', adminAuth());
    expect(removed.status).toBe(200);
    await eventually(async () => expect((await request(reader.url).get(EXPERIMENT).set('Authorization', basic('carol', token))).status).toBe(403));
    expect(reader.logs.join('')).toContain('pattern grants changed by another process: reloaded');
  });

  it("does not fire on the process's own writes", async () => {
    const changes = () => writer.logs.join('').split('policy store changed by another process').length - 1;
    const before = changes();
    await request(writer.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'carol' });
    await new Promise((r) => setTimeout(r, 300));
    expect(changes()).toBe(before);
  });

  it('reloads for an operator\'s SQL on policy tables, not for another process\'s session bookkeeping', async () => {
    const changes = () => reader.logs.join('').split('policy store changed by another process').length - 1;
    const operator = new Database(join(writer.dir, 'flowgate.db'));
    try {
      const before = changes();
      operator.prepare("INSERT INTO audit_log (at, actor, action, target) VALUES (?, 'ops', 'note', 'x')").run(Date.now());
      operator.prepare('UPDATE sessions SET last_seen_at = last_seen_at').run();
      await new Promise((r) => setTimeout(r, 300));
      expect(changes()).toBe(before);
      const bob = operator.prepare("SELECT id FROM users WHERE username = 'bob'").get() as { id: number };
      operator.prepare("UPDATE grants SET permission = 'NO_PERMISSIONS' WHERE user_id = ? AND resource_id = '1'").run(bob.id);
      await eventually(() => expect(changes()).toBe(before + 1));
      // Just the changed resource is re-read, not the whole grant index.
      const line = reader.logs.join('').split('\n').filter((l) => l.includes('policy store changed by another process')).at(-1)!;
      expect(JSON.parse(line)).toMatchObject({ reread: 1 });
      const token = await mint('bob');
      await eventually(async () => expect((await request(reader.url).get(EXPERIMENT).set('Authorization', basic('bob', token))).status).toBe(403));
    } finally {
      operator.close();
    }
  });
});

describe.skipIf(postgres)('one change to very many resources', () => {
  it('a group with 150k grants deleted by another process: the grants are gone and the process stays up', async () => {
    // Its own store: the only process polling it, so the change log still names every resource when read.
    const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_STORE_WATCH_MS: '50' });
    const operator = new Database(join(fg.dir, 'flowgate.db'));
    try {
      expect((await request(fg!.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'dave' })).status).toBe(201);
      const token = (await request(fg!.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'dave' }))
        .body.token as string;
      const dave = (operator.prepare("SELECT id FROM users WHERE username = 'dave'").get() as { id: number }).id;
      operator.transaction(() => {
        const group = Number(operator.prepare("INSERT INTO groups (name, created_at) VALUES ('bulk', 0)").run().lastInsertRowid);
        operator.prepare('INSERT INTO group_members (group_id, user_id) VALUES (?, ?)').run(group, dave);
        const grant = operator.prepare("INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at) VALUES ('experiment', ?, ?, 'READ', 0, 0)");
        for (let e = 1; e <= 150_000; e++) grant.run(String(e), group);
      })();
      await eventually(async () => expect((await request(fg!.url).get(EXPERIMENT).set('Authorization', basic('dave', token))).status).toBe(200), 15_000);

      operator.prepare("DELETE FROM groups WHERE name = 'bulk'").run();
      await eventually(async () => expect((await request(fg!.url).get(EXPERIMENT).set('Authorization', basic('dave', token))).status).toBe(403), 15_000);
      const reloads = fg.logs.join('').split('\n').filter((l) => l.includes('policy store changed by another process'));
      expect(JSON.parse(reloads.at(-1)!)).toMatchObject({ reread: 'all' });
    } finally {
      operator.close();
      await fg.close();
      removeDir(fg.dir);
    }
  }, 60_000);
});

describe.skipIf(postgres)('start-up beside another process', () => {
  it('a revoke committed by another process during start-up is obeyed', async () => {
    const first = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_STORE_WATCH_MS: '0' });
    const dir = first.dir;
    let token: string;
    try {
      expect((await request(first.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'erin' })).status).toBe(201);
      token = (await request(first.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'erin' })).body
        .token as string;
      const granted = await request(first.url).post('/api/2.0/mlflow/permissions/users/erin/experiments/1').set('Authorization', adminAuth()).send({ permission: 'READ' });
      expect(granted.status).toBe(201);
    } finally {
      await first.close();
    }
    const operator = new Database(join(dir, 'flowgate.db'));
    // Enough grants after erin's for the start-up read to take several pages.
    operator.transaction(() => {
      const grant = operator.prepare("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('experiment', ?, 1, 'READ', 0, 0)");
      for (let e = 100; e < 12_100; e++) grant.run(String(e));
    })();

    // The revoke commits while the starting process reads its grant index, between two of its pages
    // (after the one holding erin's grant): another process's commit, at the worst moment.
    const prepare = Database.prototype.prepare;
    let revoked = false;
    Database.prototype.prepare = function (this: Database.Database, text: string) {
      const statement = prepare.call(this, text) as Database.Statement;
      if (!/FROM grants WHERE id > \? ORDER BY id LIMIT/.test(text)) return statement;
      const all = statement.all.bind(statement);
      return Object.assign(statement, {
        all: (...args: unknown[]) => {
          const rows = all(...args);
          if (!revoked && Number(args[0]) > 0) {
            revoked = true;
            operator.prepare("DELETE FROM grants WHERE resource_id = '1' AND user_id = (SELECT id FROM users WHERE username = 'erin')").run();
          }
          return rows;
        },
      });
    } as typeof prepare;
    let fg: TestFlowgate | undefined;
    try {
      fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_STORE_WATCH_MS: '50' }, dir);
    } finally {
      Database.prototype.prepare = prepare;
    }
    try {
      expect(revoked).toBe(true);
      await eventually(async () => expect((await request(fg!.url).get(EXPERIMENT).set('Authorization', basic('erin', token))).status).toBe(403));
    } finally {
      operator.close();
      await fg?.close();
      removeDir(dir);
    }
  }, 60_000);
});

describe.skipIf(postgres)('pruning the grant change log while another connection holds the write lock', () => {
  it('the change read by that poll is still obeyed, requests are not held up, and the prune is done later', async () => {
    // Its own store: the only process polling it.
    const fg = await startTestFlowgate({ FLOWGATE_UPSTREAM_URL: upstream.url, FLOWGATE_STORE_WATCH_MS: '50' });
    const operator = new Database(join(fg.dir, 'flowgate.db'));
    const locker = new Database(join(fg.dir, 'flowgate.db'));
    try {
      expect((await request(fg.url).post('/api/2.0/mlflow/users/create').set('Authorization', adminAuth()).send({ username: 'bob' })).status).toBe(201);
      const token = (await request(fg.url).patch('/api/2.0/mlflow/permissions/users/access-token').set('Authorization', adminAuth()).send({ username: 'bob' }))
        .body.token as string;
      const granted = await request(fg.url).post('/api/2.0/mlflow/permissions/users/bob/experiments/1').set('Authorization', adminAuth()).send({ permission: 'READ' });
      expect(granted.status).toBe(201);
      expect((await request(fg.url).get(EXPERIMENT).set('Authorization', basic('bob', token))).status).toBe(200);

      // Another process commits a bulk change that also removes bob's grant: the log now holds more
      // than twice the rows kept, so the next poll prunes it.
      operator.transaction(() => {
        const group = Number(operator.prepare("INSERT INTO groups (name, created_at) VALUES ('bulk', 0)").run().lastInsertRowid);
        const grant = operator.prepare("INSERT INTO grants (resource_kind, resource_id, group_id, permission, created_at, updated_at) VALUES ('experiment', ?, ?, 'READ', 0, 0)");
        for (let e = 100; e < 20_200; e++) grant.run(String(e), group);
        operator.prepare("DELETE FROM grants WHERE resource_id = '1' AND user_id = (SELECT id FROM users WHERE username = 'bob')").run();
      })();
      // In the same tick (no poll in between), a third connection takes the write lock across that poll.
      locker.exec('BEGIN IMMEDIATE');
      const logRows = () => (operator.prepare('SELECT count(*) AS n FROM grant_changes').get() as { n: number }).n;
      try {
        // Before, the prune waited out the 5 s busy timeout on the event loop, threw, and the removal was never applied.
        const start = Date.now();
        await eventually(async () => expect((await request(fg.url).get(EXPERIMENT).set('Authorization', basic('bob', token))).status).toBe(403), 2000);
        expect(Date.now() - start).toBeLessThan(2500);
        expect(logRows()).toBeGreaterThan(20_000);
      } finally {
        locker.exec('ROLLBACK');
      }
      await eventually(() => expect(logRows()).toBeLessThanOrEqual(10_000));
      expect((await request(fg.url).get(EXPERIMENT).set('Authorization', basic('bob', token))).status).toBe(403);
    } finally {
      operator.close();
      locker.close();
      await fg.close();
      removeDir(fg.dir);
    }
  }, 60_000);
});
