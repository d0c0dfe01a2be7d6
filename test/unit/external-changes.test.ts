import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../../src/store/database.js';
import { watchExternalChanges, type ExternalGrantChanges } from '../../src/store/external-changes.js';

/** Two connections on one store file: `self` is watched, `other` plays the second process. */
function twoConnections() {
  const path = join(mkdtempSync(join(tmpdir(), 'fg-watch-')), 'p.db');
  return { self: openDatabase(path), other: openDatabase(path) };
}

const open: Db[] = [];
const watches: Array<{ stop(): void }> = [];
afterEach(() => {
  for (const w of watches.splice(0)) w.stop();
  for (const db of open.splice(0)) db.close();
});

function watched() {
  const { self, other } = twoConnections();
  open.push(self, other);
  const seen: ExternalGrantChanges[] = [];
  watches.push(watchExternalChanges(self, 10, (g) => seen.push(g)));
  const settle = () => new Promise((r) => setTimeout(r, 60));
  const addUser = (db: Db, name: string) =>
    Number(db.prepare('INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES (?, ?, 0, 0, 0)').run(name, name).lastInsertRowid);
  const grant = (db: Db, userId: number, experiment: string) =>
    db
      .prepare("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('experiment', ?, ?, 'READ', 0, 0)")
      .run(experiment, userId);
  return { self, other, seen, settle, addUser, grant };
}

describe('watching the store for other processes’ policy changes', () => {
  it('names the resources whose grants another connection changed, deletes cascaded from a user included', async () => {
    const { other, seen, settle, addUser, grant } = watched();
    const bob = addUser(other, 'bob');
    grant(other, bob, '7');
    grant(other, bob, '8');
    await settle();
    expect(seen.flat()).toEqual(expect.arrayContaining([{ kind: 'experiment', id: '7' }, { kind: 'experiment', id: '8' }]));

    seen.length = 0;
    other.prepare('DELETE FROM users WHERE id = ?').run(bob);
    await settle();
    expect(seen).toHaveLength(1);
    expect([...(seen[0] as readonly unknown[])].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual([
      { kind: 'experiment', id: '7' },
      { kind: 'experiment', id: '8' },
    ]);
  });

  it('reports a policy change without grants (a new token) as no resource to re-read', async () => {
    const { other, seen, settle, addUser } = watched();
    const bob = addUser(other, 'bob');
    await settle();
    seen.length = 0;
    other.prepare('INSERT INTO access_tokens (user_id, token_hash, created_at, expires_at) VALUES (?, ?, 0, 1)').run(bob, 'x'.repeat(64));
    await settle();
    expect(seen).toEqual([[]]);
  });

  it('stays quiet on its own connection’s writes', async () => {
    const { self, seen, settle, addUser, grant } = watched();
    grant(self, addUser(self, 'alice'), '9');
    await settle();
    expect(seen).toEqual([]);
  });

  it('asks for a full re-read when the log was pruned past what it saw', async () => {
    const { other, seen, settle, addUser, grant } = watched();
    const bob = addUser(other, 'bob');
    await settle();
    seen.length = 0;
    other.transaction(() => {
      for (let e = 1; e <= 20; e++) grant(other, bob, String(e));
      other.prepare('DELETE FROM grant_changes WHERE seq <= (SELECT max(seq) - 5 FROM grant_changes)').run();
    })();
    await settle();
    expect(seen).toEqual(['all']);
  });

  it('applies a commit that lands between the reads of one poll', async () => {
    const { self, other } = twoConnections();
    open.push(self, other);
    const bob = Number(other.prepare("INSERT INTO users (username, display_name, is_admin, is_service_account, created_at) VALUES ('bob', 'bob', 0, 0, 0)").run().lastInsertRowid);
    other.prepare("INSERT INTO grants (resource_kind, resource_id, user_id, permission, created_at, updated_at) VALUES ('experiment', '7', ?, 'READ', 0, 0)").run(bob);
    // Another process's revoke commits right after the poll read data_version, before it reads the generation.
    let armed = false;
    const prepare = self.prepare.bind(self);
    self.prepare = ((text: string) => {
      const statement = prepare(text);
      if (text !== 'SELECT value FROM policy_generation WHERE id = 1') return statement;
      const get = statement.get.bind(statement);
      return Object.assign(statement, {
        get: (...args: unknown[]) => {
          if (armed) {
            armed = false;
            other.prepare("DELETE FROM grants WHERE resource_id = '7'").run();
          }
          return get(...args);
        },
      });
    }) as typeof self.prepare;
    const seen: ExternalGrantChanges[] = [];
    watches.push(watchExternalChanges(self, 10, (g) => seen.push(g)));
    await new Promise((r) => setTimeout(r, 40));
    seen.length = 0;
    armed = true;
    await new Promise((r) => setTimeout(r, 100));
    expect(armed).toBe(false);
    expect(seen.flat()).toContainEqual({ kind: 'experiment', id: '7' });
  });
});
